"""A model's files checked against its declared ``format`` when it is published, so that a
file that is not what the manifest says is refused then, with what to do, not at run time.

``onnx``: each ``.onnx`` file is a model whose graph takes and gives something and whose
external data are other files of the artifact beside it (``pinbench.registry.onnx_files``,
the check the run makes before it loads).

``safetensors``: the manifest names an ``architecture`` (the code its weights load into), its
weights are one file ending in ``.safetensors`` whose header parses and whose tensors cover
the file exactly (``pinbench.artifacts.safetensors``), and no other file is one of PyTorch's
pickled formats. Only headers are read; nothing is executed or unpickled.

``torch-state-dict``: no file holds the signature (the builder's module is code, not run at
publish), so the manifest is its only source: a model that declares no input or no output is
refused, as an ONNX graph that takes or gives nothing is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pinbench.artifacts.safetensors import KINDS, NotSafetensors, read_header, recognise
from pinbench.registry.lite_files import check_lite_files
from pinbench.registry.manifest import ModelManifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.processing_code import STATE_DICT_FORMAT
from pinbench.registry.sourcing import FileProblem

SUFFIX = ".safetensors"

_WHAT_TO_DO = {
    "torchscript": "declare `format: torchscript`",
    "torch-export": "declare `format: torch-export`",
}


class FormatMismatch(FileProblem):
    """A file's bytes are not in the format its manifest declares."""

    def __init__(self, *, path: str, declared: str, reason: str, found: str | None) -> None:
        super().__init__(path=path, reason=reason)
        self.declared = declared
        self.found = found


class UndeclaredSignature(FileProblem):
    """A model whose files hold no signature and whose manifest declares none (no input, or
    no output)."""

    def __init__(self, *, path: str, declared: str, missing: str) -> None:
        super().__init__(
            path=path,
            reason=f"a {declared} model's inputs and outputs are its manifest's alone (its "
            f"files are weights and the builder's code, which publish does not run), and it "
            f"declares no {missing}: list the inputs forward takes (name, element_type, "
            "shape) and the outputs it returns, in order (a name each)",
        )
        self.declared = declared
        self.missing = missing


class SafetensorsLayout(FileProblem):
    """A safetensors manifest whose files or fields the torch predictor could not load."""


def check_model_files(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse ``manifest`` when its files are not in its declared format; ``where`` gives the
    (already verified) bytes of each file."""
    from pinbench.registry.declared_format import check_declared_format
    from pinbench.registry.engine_formats import check_engine_folder

    _check_declared_signature(manifest)
    check_declared_format(manifest, where)
    if manifest.format == "onnx":
        _check_onnx(manifest, where)
    if manifest.format == "torch-export":
        _check_torch_export(manifest, where)
    _check_alphabets(manifest, where)
    _check_metadata_names(manifest, where)
    if manifest.format == "torchscript":
        _check_torchscript(manifest, where)
    if manifest.format == "hf-folder":
        _check_hf_folder(manifest, where)
    check_engine_folder(manifest, where)
    check_lite_files(manifest, where)
    if manifest.format != "safetensors":
        return
    labels = {o.labels.path for o in manifest.outputs if o.labels is not None and o.labels.path}
    weights = [f for f in manifest.files if f.path not in labels]
    for f in weights:
        _check_safetensors(f, where(f))
    named = [f.path for f in weights if f.path.endswith(SUFFIX)]
    if len(named) != 1:
        raise SafetensorsLayout(
            path=named[1] if named else weights[0].path if weights else "(none)",
            reason=f"format safetensors loads exactly one weights file ending in {SUFFIX}; "
            f"the manifest has {len(named)}" + (f" ({', '.join(named)})" if named else ""),
        )
    if manifest.architecture is None:
        raise SafetensorsLayout(
            path=named[0],
            reason="safetensors weights hold tensors only: name the `architecture` they load "
            "into (pinbench ships the model code; see the README's model formats)",
        )


def _check_hf_folder(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """A Hugging Face folder as the transformers predictor reads it before it loads
    (``artifacts.hf_folder``): one config.json naming one architecture, which the manifest's
    ``architecture`` must equal; no custom code; safetensors weights whose headers parse, or
    pickles only with ``trusted: true`` (and ``trusted`` only with pickles)."""
    from pinbench.artifacts.hf_folder import HfFolderRefused, describe

    try:
        folder = describe({f.path: where(f) for f in manifest.files})
    except HfFolderRefused as exc:
        raise FormatMismatch(
            path=exc.path, declared="hf-folder", reason=exc.reason, found=None
        ) from None
    config = folder.path("config.json")
    if manifest.architecture != folder.architecture:
        raise FormatMismatch(
            path=config,
            declared="hf-folder",
            reason=f"config.json names the architecture {folder.architecture!r}; the "
            f"manifest's `architecture` must say the same (it says {manifest.architecture!r})",
            found=None,
        )
    if folder.pickled != manifest.trusted:
        reason = (
            "the weights are pickles, which run code when loaded: convert them to safetensors, "
            "or, if you vouch for whoever made them, say `trusted: true` (runs then need "
            "--allow-pickle)"
            if folder.pickled
            else "`trusted: true` is for pickled weights; these are safetensors: leave it out"
        )
        raise FormatMismatch(
            path=folder.weights[0], declared="hf-folder", reason=reason, found=None
        )
    for entry in manifest.files if not folder.pickled else ():
        _check_safetensors(entry, where(entry))  # and no other file is a pickle


def _check_declared_signature(manifest: ModelManifest) -> None:
    """A ``torch-state-dict`` model declares at least one input and one output."""
    if manifest.format != STATE_DICT_FORMAT:
        return
    builder = manifest.builder.file if manifest.builder is not None else None
    path = builder or (manifest.files[0].path if manifest.files else "-")
    for missing, declared in (("inputs", manifest.inputs), ("outputs", manifest.outputs)):
        if not declared:
            raise UndeclaredSignature(path=path, declared=manifest.format, missing=missing)


def _check_onnx(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Each ``.onnx`` file as the ONNX Runtime predictor checks it before it loads
    (``registry.onnx_files``): a graph with inputs and outputs, external data only in the
    artifact's other listed files beside it. (That an artifact has exactly one ``.onnx`` file
    is left to the run: without one nothing is loaded, so nothing can be read.)"""
    from pinbench.registry.onnx_files import SUFFIX, OnnxRefused, check_onnx

    listed = [f.path for f in manifest.files]
    for entry in manifest.files:
        if not entry.path.endswith(SUFFIX):
            continue
        try:
            check_onnx(entry.path, where(entry), listed)
        except OnnxRefused as exc:
            refused = FormatMismatch(path=exc.path, declared="onnx", reason=exc.reason, found=None)
            raise refused from None


def _check_torchscript(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Exactly one file is a TorchScript archive by its content, whatever its name (the one the
    torch predictor loads: ``artifacts.torchscript``); only zip directories are read."""
    from pinbench.artifacts.torchscript import NotOneTorchScript, torchscript_file

    try:
        torchscript_file({f.path: where(f) for f in manifest.files})
    except NotOneTorchScript as exc:
        path = exc.found[1] if exc.found else manifest.files[0].path if manifest.files else "-"
        raise FormatMismatch(
            path=path, declared="torchscript", reason=str(exc), found=None
        ) from None


def _check_alphabets(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Each text output's CTC alphabet as the run reads it (``tasks.text_recognition.ctc``):
    a file of UTF-8 lines, or the ONNX model's metadata entry, read without loading it."""
    outputs = [o for o in manifest.outputs if o.ctc is not None]
    if not outputs:
        return
    from pinbench.artifacts.hf_json import HfFolderRefused, word_delimiter
    from pinbench.registry.checks import CheckRefused, checks

    files = {f.path: where(f) for f in manifest.files}
    for out in outputs:
        assert out.ctc is not None
        try:
            classes = checks().ctc_alphabet(out.ctc, files, output=str(out.name))
        except CheckRefused as exc:
            onnx = next((p for p in files if p.endswith(".onnx")), "(none)")
            path = out.ctc.alphabet.file or out.ctc.alphabet.vocab or onnx
            raise FormatMismatch(
                path=path, declared=manifest.format, reason=exc.reason, found=None
            ) from None
        try:
            named = word_delimiter(files)
        except HfFolderRefused as exc:
            raise FormatMismatch(
                path=exc.path, declared=manifest.format, reason=exc.reason, found=None
            ) from None
        if named and out.ctc.word_delimiter is None and named[1] in classes:
            raise FormatMismatch(
                path=named[0],
                declared=manifest.format,
                reason=f"output {str(out.name)!r}'s alphabet holds the tokenizer's word "
                f"delimiter {named[1]!r} (word_delimiter_token): declare it, `ctc: "
                f"{{word_delimiter: {named[1]!r}}}`, so that it decodes as a space; as a "
                "character every word boundary is an error (WER 1.0 on a perfect answer)",
                found=None,
            )


def _check_metadata_names(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Each output's class names read from the ONNX model's metadata as the run reads them
    (``tasks.class_names``), without loading the model."""
    outputs = [o for o in manifest.outputs if o.labels is not None and o.labels.metadata]
    if not outputs:
        return
    from pinbench.registry.checks import CheckRefused, checks

    files = {f.path: where(f) for f in manifest.files}
    for out in outputs:
        assert out.labels is not None
        try:
            checks().check_class_names(out.labels, files, output=str(out.name))
        except CheckRefused as exc:
            onnx = next((p for p in files if p.endswith(".onnx")), "(none)")
            raise FormatMismatch(
                path=onnx, declared=manifest.format, reason=exc.reason, found=None
            ) from None


def _check_torch_export(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Each ``.pt2`` archive's shape expressions as the torch predictor checks them before it
    loads (``artifacts.shape_exprs``): ``torch.export.load`` evaluates them with ``eval``."""
    from pinbench.artifacts.shape_exprs import ArchiveRefused, check_archive

    for entry in manifest.files:
        if not entry.path.endswith(".pt2"):
            continue
        try:
            check_archive(where(entry))
        except ArchiveRefused as exc:
            raise FormatMismatch(
                path=entry.path, declared="torch-export", reason=str(exc), found=None
            ) from None


def _check_safetensors(entry: FileEntry, path: Path) -> None:
    if not entry.path.endswith(SUFFIX):
        kind = recognise(path)  # another file of the model: refused only when it is a pickle
        if kind is not None:
            raise _mismatch(entry, kind, KINDS[kind], path)
        return
    try:
        read_header(path)
    except NotSafetensors as exc:
        raise _mismatch(entry, exc.kind, exc.reason, path) from None


def _mismatch(entry: FileEntry, kind: str | None, reason: str, path: Path) -> FormatMismatch:
    if kind == "pickle":  # what every refusal of a pickle says (``model_formats``)
        text = f"{reason}, not safetensors: {_pickle_routes(path)}"
    elif kind is not None:
        text = f"{reason}, not safetensors: {_WHAT_TO_DO[kind]}"
    else:
        text = (
            f"declared safetensors, but {reason}: save the weights with "
            "safetensors.torch.save_file, or declare the format the file is in"
        )
    return FormatMismatch(path=entry.path, declared="safetensors", reason=text, found=kind)


def _pickle_routes(path: Path) -> str:
    """A pickle's refusal (``model_formats.pickle_refusal``): a pickled object's globals, read
    from its opcodes, then the routes; a pickle of tensors, the routes."""
    from pinbench.artifacts.model_formats import identify, pickle_refusal, pickle_routes

    found = identify(path)
    if found is not None and found.format == "torch-pickle":
        return f"it is {pickle_refusal(found, None)}"
    return pickle_routes()
