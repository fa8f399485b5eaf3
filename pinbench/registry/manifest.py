"""Manifests: the typed YAML schema of the four kinds, validated at the edge.

A manifest is data, not code: identity, files with sha256, constraints on other kinds, typed
pre/post-processing steps and attributes. ``load_manifest`` turns YAML into one of
``ModelManifest | FrameworkManifest | DatasetManifest | ImageManifest`` or raises
``ManifestError`` naming the field (``$.files[0].sha256``) and what was expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from pinbench import typed
from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.registry.dataset_manifest import DatasetManifest, ImageManifest
from pinbench.registry.explain import VersionText, explain
from pinbench.registry.late_fields import (
    LATE_FIELDS,
    LATE_FILE_FIELDS,
    LATE_LABEL_FIELDS,
    drop_unset,
    drop_unset_builder,
    drop_unset_inputs,
    drop_unset_outputs,
)
from pinbench.registry.manifest_parts import (
    _RELEASE,
    Constraint,
    FileEntry,
    ManifestError,
    Platform,
    _check_files,
    _Common,
    _Strict,
)
from pinbench.registry.model_requirements import Requirement as Requirement
from pinbench.registry.model_requirements import check_requirements
from pinbench.registry.names import KINDS
from pinbench.registry.ports import Input, Output, check_quantization
from pinbench.registry.processing_code import Builder, Code, check_builder, check_processing
from pinbench.registry.steps import (
    AUDIO_STEPS,
    InputStep,
)

# ---------------------------------------------------------------- the four kinds


class TrainedBy(_Strict, frozen=True, kw_only=True):
    """The training run whose final weights a model version holds (``run --publish-as``).

    Publishing checks it against the run recorded in this registry: the run succeeded, is
    a run of ``lockfile``, and its final weights' sha256 is the sha256 of the file ``weights``
    (``registry.trained``); a claim that does not hold is refused."""

    run: str
    """The run's id."""
    lockfile: str
    """The sha256 of the run's lockfile."""
    weights: str
    """The path of the model file holding the run's final weights."""


class ModelManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="model"):
    framework: Constraint
    format: Literal[
        "onnx",
        "torchscript",
        "torch-export",
        "safetensors",
        "torch-pickle",
        "torch-state-dict",
        "savedmodel",
        "keras",
        "keras-h5",
        "tflite",
        "hf-folder",
        "ort-genai",
        "ctranslate2",
        "openvino",
        "gguf",
        "tf-graphdef",
        "caffe",
        "caffe2",
        "mxnet",
    ]
    """The last four come from MLModelScope manifests (``import-mlmodelscope``): described and
    published, but no predictor loads them; a run stops with an error naming the framework or
    the format."""
    files: list[FileEntry]
    architecture: str | None = None
    """For safetensors weights: the architecture the weights load into; for a Hugging Face
    folder (``hf-folder``), config.json's (checked at publish)."""
    trusted: bool = False
    """Allow unpickling (format ``torch-pickle``). Never implied."""
    inputs: list[Input] = msgspec.field(default_factory=list)
    outputs: list[Output] = msgspec.field(default_factory=list)
    trained_by: TrainedBy | None = None
    """The training run these weights come from, checked when published."""
    preprocess: Code | None = None
    postprocess: Code | None = None
    """Python code (``registry.processing_code``): a sample to inputs, outputs to outputs."""
    builder: Builder | None = None
    """For ``torch-state-dict``: the function that builds the module its weights load into."""
    requirements: list[Requirement] | None = None
    """Hash-pinned packages the model's own code imports (``registry.model_requirements``)."""

    def __post_init__(self) -> None:
        self._check_identity()
        _check_files(self.files, required=True)
        paths = {f.path for f in self.files}
        if self.trained_by is not None and self.trained_by.weights not in paths:
            raise ValueError(
                f"trained_by.weights {self.trained_by.weights!r} is not among the files"
            )
        for out in self.outputs:
            if out.labels is not None and out.labels.metadata is not None:
                if self.format != "onnx":
                    raise ValueError(
                        f"output {out.name!r} reads its class names from ONNX metadata, but the "
                        f"model's format is {self.format}: give them as a `path` file"
                    )
            elif out.labels is not None and out.labels.path not in paths:
                raise ValueError(
                    f"labels file {out.labels.path!r} of output {out.name!r} is not among the "
                    "files: list it under `files` (`pinbench manifest model MODEL "
                    f"{out.labels.path}` does)"
                )
            if out.ctc is not None:
                _check_alphabet(out, self.format, paths)
            ssd = out.detection.ssd if out.detection is not None else None
            if ssd is not None and ssd.anchors not in paths:
                raise ValueError(
                    f"the ssd anchors file {ssd.anchors!r} of output {out.name!r} is not among "
                    "the files"
                )
        _check_keys("inputs", [i.name for i in self.inputs])
        _check_keys("outputs", [o.name for o in self.outputs])
        names = {str(i.name): i for i in self.inputs}
        for inp in self.inputs:
            _check_tokenize(inp, paths)
            _check_audio(inp)
        from pinbench.registry.input_kinds import check_model_inputs
        from pinbench.registry.row_rules import check_lengths, check_views

        check_model_inputs(self.inputs, self.outputs)
        check_views(self.inputs, self.outputs)
        check_lengths(self.inputs, self.outputs)
        check_processing(self.preprocess, self.postprocess, paths, self.inputs)
        check_builder(self.format, self.builder, paths, self.architecture, self.trusted)
        code = (self.builder, self.preprocess, self.postprocess)
        check_requirements(self.requirements, has_code=any(c is not None for c in code))
        check_quantization(self.format, [*self.inputs, *self.outputs])
        streamed = next((i for i in self.inputs if i.stream is not None), None)
        for out in self.outputs:
            transposed = any(s.transpose is not None for s in out.steps)
            if streamed is not None and transposed:
                raise ValueError(
                    f"output {out.name!r} declares a transpose step but input "
                    f"{streamed.name!r} is streamed: a streamed sample's chunk answers are "
                    "stacked along their first axis, the batch's, so they are not transposed"
                )
            for ostep in out.steps:
                if ostep.pool is None or ostep.pool.mask is None:
                    continue
                mask = names.get(ostep.pool.mask)
                if mask is None:
                    raise ValueError(
                        f"output {out.name!r} pools with mask {ostep.pool.mask!r}, which is not "
                        f"an input (inputs: {', '.join(sorted(names))})"
                    )
                first = mask.steps[0].tokenize if mask.steps else None
                if first is not None and first.output != "attention_mask":
                    raise ValueError(
                        f"output {out.name!r} pools with mask {mask.name!r}, whose tokenize "
                        f"step gives {first.output}, not attention_mask"
                    )


def _check_keys(side: str, names: list[str | int]) -> None:
    """Each declared input (output) is fed (read) by its name as text, an index by its digits:
    two whose names read the same would share one array (the second's silently lost)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        first = seen.setdefault(str(name), i)
        if first != i:
            raise ValueError(
                f"{side}[{first}] ({names[first]!r}) and {side}[{i}] ({name!r}) are both "
                f"{str(name)!r}: a run keys each declared {side[:-1]} by its name as text (an "
                "index as its digits), so give each its own"
            )


def _check_alphabet(out: Output, model_format: str, paths: set[str]) -> None:
    assert out.ctc is not None
    alphabet = out.ctc.alphabet
    for path in (alphabet.file, alphabet.vocab):
        if path is not None and path not in paths:
            raise ValueError(
                f"the alphabet file {path!r} of output {out.name!r} is not among the files"
            )
    if alphabet.metadata is not None and model_format != "onnx":
        raise ValueError(
            f"output {out.name!r} reads its alphabet from ONNX metadata, but the model's "
            f"format is {model_format}: give the alphabet as a `file`"
        )


def _check_tokenize(inp: Input, paths: set[str]) -> None:
    """A tokenize step is the input's first, only a dtype step may follow it, and its
    tokenizer is a file of the model."""
    for i, step in enumerate(inp.steps):
        if step.tokenize is None:
            continue
        if i != 0:
            raise ValueError(f"input {inp.name!r}: tokenize must be the first step")
        if step.tokenize.tokenizer not in paths:
            raise ValueError(
                f"tokenizer file {step.tokenize.tokenizer!r} of input {inp.name!r} is not "
                "among the files"
            )
        if any(later.dtype is None for later in inp.steps[1:]):
            raise ValueError(f"input {inp.name!r}: only a dtype step may follow tokenize")


def _check_audio(inp: Input) -> None:
    """``decode_audio`` is the input's first step, ``resample`` (if any) the next, the other
    audio steps come after it, and the waveform's sample rate is declared (``decode_audio``'s
    ``rate`` or a ``resample``)."""
    kinds = [step_name(step) for step in inp.steps]
    if not any(k in AUDIO_STEPS for k in kinds):
        return
    if kinds[0] != "decode_audio" or "decode_audio" in kinds[1:]:
        raise ValueError(
            f"input {inp.name!r}: decode_audio must be the first step (and only once) of an "
            "input with audio steps (resample, fit_length)"
        )
    if kinds.count("resample") > 1 or ("resample" in kinds and kinds[1] != "resample"):
        raise ValueError(f"input {inp.name!r}: resample must follow decode_audio directly, once")
    first = inp.steps[0].decode_audio
    assert first is not None
    if first.rate is None and "resample" not in kinds:
        raise ValueError(
            f"input {inp.name!r}: declare the sample rate the model takes: `decode_audio: "
            "{rate: 16000, ...}` (every file must have it) or a `resample: {rate: 16000}` step "
            "after decode_audio (files of any rate are resampled)"
        )


def step_name(step: InputStep) -> str:
    """The one field a step sets: ``resize`` for ``- resize: {...}``."""
    return next(n for n in step.__struct_fields__ if getattr(step, n) is not None)


class Environment(_Strict, frozen=True, kw_only=True):
    """How to obtain the framework on one platform: an image, a requirements set, or both."""

    platform: Platform = msgspec.field(default_factory=Platform)
    image: Constraint | None = None
    requirements: list[Requirement] = msgspec.field(default_factory=list)
    python: str | None = None

    def __post_init__(self) -> None:
        if self.image is None and not self.requirements:
            raise ValueError(
                f"environment {self.platform.key()} needs an image, requirements, or both"
            )


class FrameworkManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="framework"):
    environments: list[Environment]
    files: list[FileEntry] = msgspec.field(default_factory=list)
    installs: VersionText | None = None
    """The framework release its environments install (``1.31.0``), what a run checks it
    has; left out, the artifact's own version. Set it when a corrected manifest of the same
    release is published as a new artifact version (decision 80)."""

    def __post_init__(self) -> None:
        self._check_identity()
        if self.installs is not None and not _RELEASE.fullmatch(self.installs):
            raise ValueError(
                f"installs {self.installs!r} must be a release as the framework reports it, "
                "e.g. '1.31.0' or '2.21.0rc1' (no local label)"
            )
        _check_files(self.files, required=False)
        if not self.environments:
            raise ValueError("environments must list at least one platform")
        keys = [e.platform.key() for e in self.environments]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"platform {dupes[0]} is listed twice in environments")

    @property
    def installed_version(self) -> str:
        """The framework release a run must find: ``installs``, else the artifact's version."""
        return self.installs if self.installs is not None else self.version

    def environment_for(self, platform: Platform) -> Environment | None:
        for env in self.environments:
            if env.platform == platform:
                return env
        return None


Manifest = ModelManifest | FrameworkManifest | DatasetManifest | ImageManifest
MANIFEST_TYPES: dict[str, type[Manifest]] = {
    "model": ModelManifest,
    "framework": FrameworkManifest,
    "dataset": DatasetManifest,
    "image": ImageManifest,
}


# ---------------------------------------------------------------- loading and digests


def parse_manifest(data: object, *, source: str = "<manifest>") -> Manifest:
    """Validate already-parsed data (a mapping) as a manifest."""
    if not isinstance(data, dict):
        raise ManifestError(source=source, reason="expected a mapping at the top level")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in MANIFEST_TYPES:
        shown = repr(kind) if isinstance(kind, str | None) else f"a {type(kind).__name__}"
        raise ManifestError(
            source=source,
            reason=f"`kind` must be one of {', '.join(KINDS)}, got {shown} - at `$.kind`",
        )
    try:
        manifest = typed.convert(data, MANIFEST_TYPES[kind])
    except msgspec.ValidationError as exc:
        reason = explain(str(exc), MANIFEST_TYPES[kind], data)
        raise ManifestError(source=source, reason=reason) from None
    try:
        canonical_json(manifest_data(manifest))
    except ValueError as exc:  # a non-finite float from data not read by yamlsafe
        raise ManifestError(source=source, reason=f"cannot be digested: {exc}") from None
    return manifest


def load_manifest_text(text: str, *, source: str = "<manifest>") -> Manifest:
    """Parse (YAML within ``yamlsafe``'s limits) and validate a manifest."""
    from pinbench.registry.yamlsafe import YamlRefused, load_yaml  # not for stored manifests

    try:
        data = load_yaml(text)
    except YamlRefused as exc:
        raise ManifestError(source=source, reason=exc.reason) from None
    return parse_manifest(data, source=source)


def load_manifest(path: Path) -> Manifest:
    from pinbench.registry.yamlsafe import YamlRefused, read_yaml_file

    try:
        text = read_yaml_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(source=str(path), reason=f"cannot read: {exc}") from None
    except YamlRefused as exc:
        raise ManifestError(source=str(path), reason=exc.reason) from None
    return load_manifest_text(text, source=str(path))


def manifest_data(manifest: Manifest) -> dict[str, Any]:
    """The manifest as plain data, every default filled in (what is stored and digested)."""
    data = msgspec.to_builtins(manifest)
    assert isinstance(data, dict)
    drop_unset(data, LATE_FIELDS)
    for entry in [*data.get("files", []), *([data["file_index"]] if "file_index" in data else [])]:
        drop_unset(entry, LATE_FILE_FIELDS)
    if isinstance(data.get("labels"), dict):
        drop_unset(data["labels"], LATE_LABEL_FIELDS)
    drop_unset_inputs(data.get("inputs"))
    drop_unset_outputs(data.get("outputs"))
    drop_unset_builder(data)
    return data


def manifest_digest(manifest: Manifest) -> Digest:
    return Digest.of_bytes(canonical_json(manifest_data(manifest)))


def json_schemas() -> dict[str, dict[str, Any]]:
    """One JSON Schema per kind, for editors, every struct and field described
    (``schema_docs``, read only here)."""
    from pinbench.registry.schema_docs import describe

    return {kind: describe(msgspec.json.schema(t)) for kind, t in MANIFEST_TYPES.items()}
