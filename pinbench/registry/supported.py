"""What a publish accepts beyond the schema: declared values the evaluator honours today.

The schema (``manifest``) describes more than the evaluator does: MLModelScope manifests
declare detection and segmentation models, and ``import-mlmodelscope`` must still read them.
Publishing is where such a value is refused, naming the field and what is supported, so no
declared field is silently ignored (DESIGN invariant 10; decision 81). Stored manifests are
never re-checked here: what was published stays readable.
"""

from __future__ import annotations

import re
from typing import Any, Final

from pinbench.errors import UserError
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.manifest import FrameworkManifest, Manifest, ModelManifest
from pinbench.registry.output_steps import check_output_steps

SUPPORTED: Final[dict[str, tuple[str, ...]]] = {
    "input.type": ("image", "tensor", "text"),
    "output.type": (
        "classification",
        "tensor",
        "embedding",
        "detection",
        "segmentation",
        "text",
        "binary",
        "generation",
    ),
}
"""Per field, the values the evaluator acts on (a dataset's task: one the task registry
knows that accuracy runs score, ``pinbench.tasks``): an input
of type image or tensor is fed as the sample array through its declared steps, one of type
text through its tokenize step; an output of type classification or tensor is read as class
scores, one of type embedding as sentence embeddings, one of type detection as boxes (its
``detection`` section and class-names ``labels`` are required, and the outputs a ``separate``
layout names must be declared ``type: tensor`` outputs), one of type segmentation as a class
per pixel (its ``segmentation`` section is required), one of type text as CTC scores (its
``ctc`` section is required by the schema), one of type binary as a probability of the
positive class (a voice-activity model's speech, at its ``binary.threshold``), one of type
generation as a causal language model's next-token logits, generated from token by token
(a Hugging Face folder's, ``format: hf-folder``)."""


class Unsupported(UserError):
    """A declared value no part of pinbench acts on yet."""

    def __init__(self, *, field: str, value: str, supported: tuple[str, ...], at: str) -> None:
        super().__init__(
            f"{field} {value!r} is not supported yet: supported: {', '.join(supported)} - at `{at}`"
        )
        self.field = field
        self.value = value
        self.supported = supported
        self.at = at


class IncompleteDetection(UserError):
    """A detection or segmentation output that does not say how to read it."""

    def __init__(self, *, output: str, missing: str, at: str, kind: str = "detection") -> None:
        super().__init__(
            f"{kind} output {output!r} has no `{missing}`: {_DETECTION_NEEDS[missing]} - at `{at}`"
        )
        self.output = output
        self.missing = missing
        self.at = at


class UndeclaredOutput(UserError):
    """A detection section naming an output the model does not declare (undeclared outputs
    are never read)."""

    def __init__(self, *, output: str, role: str, named: str, at: str) -> None:
        super().__init__(
            f"detection output {output!r} reads its {role} from output {named!r}, which the "
            f"model does not declare as a `type: tensor` output: declare it - at `{at}`"
        )
        self.output = output
        self.role = role
        self.named = named
        self.at = at


class NotAHeadOutput(UserError):
    """A ``gfl`` detection output that is none of the outputs its heads name."""

    def __init__(self, *, output: str, at: str) -> None:
        super().__init__(
            f"detection output {output!r} reads GFL heads but is none of their outputs: name "
            f"it as one level's scores or boxes, or make one of those the detection output - "
            f"at `{at}`"
        )
        self.output = output
        self.at = at


_DETECTION_NEEDS = {
    "detection": "declare how its tensor is read, e.g. `detection: {layout: yolov8, "
    "score_threshold: 0.25, nms: {iou: 0.45}}`",
    "segmentation": "declare how its tensor is read, e.g. `segmentation: {form: logits}`",
    "labels": "give the file naming its classes, one per line in column order "
    "(`labels: {path: labels.txt}`), matched to the dataset's COCO category names",
}


class InstallsMismatch(UserError):
    """A framework manifest pins its own package at another release than it says it installs."""

    def __init__(
        self, *, ref: str, package: str, pinned: str, installs: str, platform: str
    ) -> None:
        super().__init__(
            f"{ref} pins {package}=={pinned} for {platform} but says it installs {package} "
            f"{installs} (its version, or `installs`): a run would check for {installs}. Set "
            f"`installs: '{pinned}'` to publish a corrected manifest of {package} {pinned} under "
            f"a new artifact version, or pin {package}=={installs}"
        )
        self.ref = ref
        self.package = package
        self.pinned = pinned
        self.installs = installs
        self.platform = platform


def check_supported(manifest: Manifest) -> None:
    """Refuse a manifest declaring what the evaluator would ignore or get wrong."""
    if isinstance(manifest, DatasetManifest):
        from pinbench.registry.checks import checks

        scored = checks().publishable_tasks()
        if manifest.task not in scored:
            raise Unsupported(field="task", value=manifest.task, supported=scored, at="$.task")
    elif isinstance(manifest, ModelManifest):
        check_output_steps(manifest.outputs)
        for i, inp in enumerate(manifest.inputs):
            _one("input.type", inp.type, f"$.inputs[{i}].type")
            _check_order(inp.steps, f"$.inputs[{i}].steps")
        for i, out in enumerate(manifest.outputs):
            _one("output.type", out.type, f"$.outputs[{i}].type")
            needs = {"detection": ("detection", "labels"), "segmentation": ("segmentation",)}
            for missing in needs.get(out.type, ()):
                if getattr(out, missing) is None:
                    raise IncompleteDetection(
                        output=str(out.name), missing=missing, at=f"$.outputs[{i}]", kind=out.type
                    )
            if out.detection is not None:
                _check_separate(manifest, i)
    elif isinstance(manifest, FrameworkManifest):
        _check_installs(manifest)


def _check_separate(manifest: ModelManifest, index: int) -> None:
    """The outputs a detection section names beside its own (a separate layout's, an SSD's
    scores, a GFL head's levels) are declared, as tensors; a GFL output is one of its heads'."""
    out = manifest.outputs[index]
    assert out.detection is not None
    tensors = {o.name for o in manifest.outputs if o.type == "tensor"}
    at = f"$.outputs[{index}].detection"
    for role in ("scores", "classes", "count", "masks"):
        named = getattr(out.detection, role)
        if named is not None and named not in tensors:
            raise UndeclaredOutput(
                output=str(out.name), role=role, named=str(named), at=f"{at}.{role}"
            )
    gfl = out.detection.gfl
    if gfl is None:
        return
    if str(out.name) not in {str(n) for n in gfl.outputs}:
        raise NotAHeadOutput(output=str(out.name), at=f"{at}.gfl.heads")
    for i, head in enumerate(gfl.heads):
        for role in ("scores", "boxes"):
            named = getattr(head, role)
            if str(named) != str(out.name) and named not in tensors:
                raise UndeclaredOutput(
                    output=str(out.name),
                    role=f"level {i}'s {role}",
                    named=str(named),
                    at=f"{at}.gfl.heads[{i}].{role}",
                )


def _check_order(steps: Any, at: str) -> None:
    from pinbench.registry.checks import CheckRefused, checks

    try:
        checks().check_step_order(steps)
    except CheckRefused as exc:
        raise StepOrder(reason=exc.reason, at=at) from None


class StepOrder(UserError):
    """Steps in an order that would feed the model what it was not meant to see."""

    def __init__(self, *, reason: str, at: str) -> None:
        super().__init__(f"{reason} - at `{at}`")
        self.reason = reason
        self.at = at


def _one(field: str, value: str, at: str) -> None:
    if value not in SUPPORTED[field]:
        raise Unsupported(field=field, value=value, supported=SUPPORTED[field], at=at)


def _normal(name: str) -> str:
    """PEP 503's normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _check_installs(manifest: FrameworkManifest) -> None:
    """The framework's own package, where its requirements pin it, must be the release the
    run checks for (``installs``, else the artifact's version without build metadata)."""
    installs = manifest.installed_version.split("+", 1)[0]
    package = _normal(manifest.name.rsplit("/", 1)[-1])
    for env in manifest.environments:
        for req in env.requirements:
            pinned = req.version.split("+", 1)[0]  # torch==2.13.0+cpu is release 2.13.0
            if _normal(req.name) == package and pinned != installs:
                raise InstallsMismatch(
                    ref=f"framework/{manifest.name}@{manifest.version}",
                    package=req.name,
                    pinned=pinned,
                    installs=installs,
                    platform=env.platform.key(),
                )
