"""A model manifest from the model's files: the format recognised, the signature read from
the model (``signatures``), every file's sha256 and size.

Exactly one of the files given is the model (``.onnx``, a TorchScript archive whatever its
name, a ``torch.export`` ``.pt2``, a ``.keras`` file, or a SavedModel folder); the others are
files of the same artifact (labels, notes). An ONNX model's external-data files come with it, a
SavedModel folder's every file. Paths in the manifest are relative to ``base`` (where the
manifest will be, so that ``pinbench publish`` finds them beside it); a file outside it is
refused. The data is validated as a manifest before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, get_args

from pinbench.artifacts.safetensors import recognise
from pinbench.authoring.authored import Authored, default_name
from pinbench.authoring.errors import (
    AuthoringError,
    ModelCountError,
    NotAModel,
    PickleRefused,
    UndeclarableType,
)
from pinbench.authoring.listing import Relative, file_entries
from pinbench.authoring.signatures import Signature, Tensor, read_onnx
from pinbench.authoring.tensorflow_files import (
    read_keras,
    read_keras_h5,
    read_savedmodel,
    read_tflite,
)
from pinbench.authoring.torch_archives import read_torch_export, read_torchscript
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.steps import ElementType

FRAMEWORKS = {
    "onnx": "onnxruntime",
    "torchscript": "torch",
    "torch-export": "torch",
    "keras": "tensorflow",
    "keras-h5": "tensorflow",
    "savedmodel": "tensorflow",
    "tflite": "tensorflow",
}
"""The framework that runs each format this module reads."""

READERS: dict[str, Callable[[Path], Signature]] = {
    "onnx": read_onnx,
    "torchscript": read_torchscript,
    "torch-export": read_torch_export,
    "keras": read_keras,
    "keras-h5": read_keras_h5,
    "savedmodel": read_savedmodel,
    "tflite": read_tflite,
}

DEFAULT_VERSION = "1.0.0"
TORCHSCRIPT_SUFFIXES = (".pt", ".ts", ".torchscript", ".jit", ".pth")
"""Names TorchScript archives go by: one that is not an archive by its content is refused. An
archive is recognised by its content whatever its name (``artifacts.torchscript``)."""
_ELEMENT_TYPES: tuple[str, ...] = get_args(ElementType)

OUTPUTS_NOTE = (
    "set `type: classification` (with output steps, e.g. softmax and topk) on the output that "
    "holds class scores (--classification NAME), or the type and section of what the "
    "dataset's task scores, for accuracy"
)
STEPS_NOTE = (
    "add input `steps` (normalize, layout, ...) that turn the dataset's (N, H, W[, C]) samples "
    "into what the model takes (--steps FILE)"
)


def model_format(path: Path) -> str | None:
    """The format of the model at ``path``, ``None`` for a file that is no model (labels, a
    readme), or an error for one pinbench cannot describe from its file."""
    if path.is_dir():
        if (path / "saved_model.pb").is_file():
            return "savedmodel"
        if (path / "config.json").is_file():
            return "hf-folder"
        raise NotAModel(
            path=str(path),
            reason="a folder that is neither a SavedModel (saved_model.pb) nor a Hugging Face "
            "folder (config.json)",
        )
    if not path.is_file():
        raise NotAModel(path=str(path), reason="no such file")
    suffix = path.suffix.lower()
    if suffix != path.suffix and suffix in (".onnx", ".keras", ".pt2", ".tflite", ".h5", ".hdf5"):
        raise NotAModel(
            path=str(path),
            reason=f"name it {path.stem}{suffix}: a run finds its model file by the suffix "
            f"{suffix}, in lower case",
        )
    if suffix == ".onnx":
        return "onnx"
    if suffix == ".keras":
        return "keras"
    if suffix == ".tflite":
        return "tflite"
    if suffix in (".h5", ".hdf5"):
        return "keras-h5"
    if suffix == ".safetensors":
        raise NotAModel(
            path=str(path),
            reason="safetensors weights carry no signature: write that manifest by hand "
            "(format: safetensors, framework torch, architecture: a name pinbench knows)",
        )
    kind = recognise(path)
    if kind == "pickle":
        _refuse_pickle(path)
    if kind == "torch-export":
        if suffix != ".pt2":
            raise NotAModel(
                path=str(path), reason="a torch.export archive: name it .pt2 (what loads it)"
            )
        return "torch-export"
    if kind == "torchscript":  # by its content, whatever its name (the run finds it so)
        return "torchscript"
    if suffix in (".pt2", *TORCHSCRIPT_SUFFIXES):
        raise NotAModel(path=str(path), reason="not a TorchScript or torch.export archive")
    return _by_bytes(path)


def _refuse_pickle(path: Path) -> NoReturn:
    """A pickle of tensors only (a state dict, a checkpoint: ``artifacts.model_formats``, read
    without unpickling) is named with its format and the builder it needs; a pickled object with
    the globals it would load and the routes that publish it (``PickleRefused``)."""
    from pinbench.artifacts.model_formats import identify

    found = identify(path)
    if found is not None and found.format == "torch-state-dict":
        raise NotAModel(
            path=str(path),
            reason=f"{found.what}: give the builder's .py file that makes its module beside it "
            "(format: torch-state-dict; docs/processing.md: a model's own builder)",
        )
    if found is None or found.format != "torch-pickle":
        raise PickleRefused(path=str(path), globals=(), unread="its globals were not read")
    raise PickleRefused(path=str(path), globals=found.globals, unread=found.detail)


def _named_right(path: Path, fmt: str) -> str:
    """``fmt``, which the file's name gave, unless its bytes are another model format
    (``artifacts.model_formats``): an HDF5 file named ``.keras`` is named as what it is."""
    from pinbench.artifacts.model_formats import identify

    if path.is_dir():
        return fmt
    found = identify(path)
    if found is None or found.format == fmt:
        return fmt
    raise NotAModel(
        path=str(path),
        reason=f"{found.what}, not {fmt} as its name says: declare format: {found.format} "
        "and name the file as that format's run loads it",
    )


def _by_bytes(path: Path) -> str | None:
    """A model file in a format this module does not describe, named by its bytes
    (``artifacts.model_formats``) with the format to declare; None for a file that is no
    model at all."""
    from pinbench.artifacts.model_formats import identify

    found = identify(path)
    if found is None:
        return None
    if found.format in READERS:  # a format described here, under another name
        from pinbench.registry.declared_format import LOADS

        names = " or ".join(LOADS[found.format][0])
        raise NotAModel(
            path=str(path),
            reason=f"{found.what}: name it as its format's run finds it ({names})",
        )
    raise NotAModel(
        path=str(path),
        reason=f"{found.what}: declare format: {found.format}; pinbench manifest model does not "
        "read this format's signature: write the manifest by hand",
    )


def _pick(paths: Sequence[Path]) -> tuple[Path, str]:
    models = [(p, _named_right(p, fmt)) for p in paths if (fmt := model_format(p)) is not None]
    if len(models) != 1:
        raise ModelCountError(models=[str(p) for p, _ in models])
    return models[0]


def relative(base: Path, path: Path) -> str:
    """``path`` relative to ``base`` as a POSIX path, or ``OutsideFolder``."""
    return Relative(base)(path)


def _files(model: Path, fmt: str, signature: Signature, others: Sequence[Path]) -> list[Path]:
    if fmt == "savedmodel":
        first = sorted(p for p in model.rglob("*") if p.is_file())
    else:
        first = [model, *signature.needs]
    extra = []
    for p in others:
        if p.is_dir():
            raise NotAModel(path=str(p), reason="a folder: give the files in it")
        extra.append(p)
    return [*first, *extra]


def _input(tensor: Tensor) -> tuple[dict[str, Any], list[str]]:
    label = repr(tensor.name)
    notes = []
    element = tensor.element_type
    if element is None:
        element = "float32"
        notes.append(f"input {label}: the model records no element type; float32 written, check it")
    elif element not in _ELEMENT_TYPES:
        raise UndeclarableType(
            name=str(tensor.name), element_type=element, allowed=list(_ELEMENT_TYPES)
        )
    shape: list[int] = []
    if tensor.shape is None:
        notes.append(
            f"input {label}: the model records no shape; none declared (set `shape`, the "
            "dimensions after the batch axis, to have it checked)"
        )
    elif any(d is None for d in tensor.shape[1:]):
        dims = ["?" if d is None else d for d in tensor.shape]
        notes.append(
            f"input {label}: dimensions after the batch axis are dynamic ({dims}); no shape "
            "declared (the model's own checks still apply)"
        )
    else:
        shape = [int(d) for d in tensor.shape[1:] if d is not None]
    declared: dict[str, Any] = {"name": tensor.name, "element_type": element, "shape": shape}
    return declared | _quantization(tensor), notes


def _quantization(tensor: Tensor) -> dict[str, Any]:
    """A quantized TFLite tensor's ``quantization`` as the file has it (decision 280)."""
    if tensor.quantization is None:
        return {}
    scale, zero_point = tensor.quantization
    return {"quantization": {"scale": scale, "zero_point": zero_point}}


def model_manifest(
    paths: Sequence[Path],
    *,
    base: Path,
    name: str | None = None,
    version: str = DEFAULT_VERSION,
    framework_range: str | None = None,
    steps: list[Any] | dict[str, Any] | None = None,
    classification: Sequence[str] = (),
) -> Authored:
    """The model manifest for ``paths`` (one model and any other files of the artifact), its
    file paths relative to ``base``; nothing is written. ``steps`` are the input steps (a list
    for a model with one input, else a mapping from input name to list); ``classification``
    names the outputs that hold class scores."""
    from pinbench.catalog.files import SUPPORTED

    if len(paths) == 1 and str(paths[0]).startswith("hf:/"):
        return _hf(paths, base, name, version, framework_range, steps, classification)
    from pinbench.authoring.state_dict_model import state_dict_authored, state_dict_pair

    pair = state_dict_pair(paths)
    if pair is not None:  # weights and the builder that makes their module
        return state_dict_authored(pair, paths, base, name, version, framework_range)
    model, fmt = _pick(paths)
    relative(base, model)  # refused before the model is read
    if fmt == "hf-folder":
        return _hf(paths, base, name, version, framework_range, steps, classification)
    signature = READERS[fmt](model)
    others = [p for p in paths if p != model]
    files = file_entries(base, _files(model, fmt, signature, others))
    notes = list(signature.notes)
    inputs = []
    for tensor in signature.inputs:
        declared, said = _input(tensor)
        inputs.append(declared)
        notes.extend(said)
    framework = FRAMEWORKS[fmt]
    data: dict[str, Any] = {
        "kind": "model",
        "name": name if name is not None else default_name(model),
        "version": version,
        "format": fmt,
        "framework": {"name": framework, "range": framework_range or SUPPORTED[framework]},
        "files": files,
        "inputs": inputs,
        "outputs": [{"name": t.name} | _quantization(t) for t in signature.outputs],
    }
    _add_steps(inputs, steps)
    _mark_classification(data["outputs"], classification)
    parse_manifest(data, source="the manifest written from " + str(model))
    if not classification:
        notes.append(OUTPUTS_NOTE)
    if steps is None:
        notes.append(STEPS_NOTE)
    return Authored(data, notes)


def _hf(
    paths: Sequence[Path],
    base: Path,
    name: str | None,
    version: str,
    framework_range: str | None,
    steps: list[Any] | dict[str, Any] | None,
    classification: Sequence[str],
) -> Authored:
    """A Hugging Face folder on disk, or ``hf://ORG/NAME@REV``: the repository's snapshot at
    the commit ``REV`` names now, every file sourced from that commit."""
    from pinbench.authoring.hf_model import TRUSTED_COMMENT, hf_manifest, hub_folder

    if len(paths) != 1:
        raise AuthoringError(
            "a Hugging Face folder is the whole artifact: give the folder alone (put other "
            "files in it)"
        )
    folder, shown, hub = paths[0], str(paths[0]), None
    default = default_name(folder)
    if shown.startswith("hf:/"):
        shown = "hf://" + shown.removeprefix("hf:").lstrip("/")  # pathlib folds the slashes
        found = hub_folder(shown)
        if found is None:
            raise NotAModel(
                path=shown, reason="want hf://ORG/NAME@REVISION (a whole model repository)"
            )
        repo, commit, folder = found
        base, hub, default = folder, (repo, commit), repo.split("/")[-1]
    beside: dict[Path, bytes] = {}
    data, notes = hf_manifest(
        folder,
        base=base,
        name=name if name is not None else default,
        version=version,
        framework_range=framework_range,
        steps=steps,
        classification=list(classification),
        hub=hub,
        beside=beside,
    )
    if hub is not None:
        notes.append(f"every file is sourced from {hub[0]} at commit {hub[1]} (fetched at publish)")
    parse_manifest(data, source="the manifest written from " + shown)
    comments = {"trusted": TRUSTED_COMMENT} if data.get("trusted") is False else {}
    return Authored(data, notes, beside=beside, comments=comments)


def _add_steps(inputs: list[dict[str, Any]], steps: list[Any] | dict[str, Any] | None) -> None:
    if steps is None:
        return
    if isinstance(steps, list):
        if len(inputs) != 1:
            raise AuthoringError(
                f"--steps gives one list of steps but the model has {len(inputs)} inputs: map "
                "each input's name to its steps"
            )
        steps = {str(inputs[0]["name"]): steps}
    by_name = {str(i["name"]): i for i in inputs}
    for name, listed in steps.items():
        if name not in by_name:
            raise AuthoringError(
                f"--steps names input {name!r}; the model's inputs: {', '.join(by_name)}"
            )
        by_name[name]["steps"] = listed


def _mark_classification(outputs: list[dict[str, Any]], names: Sequence[str]) -> None:
    by_name = {str(o["name"]): o for o in outputs}
    for name in names:
        if name not in by_name:
            raise AuthoringError(
                f"--classification names output {name!r}; the model's outputs: {', '.join(by_name)}"
            )
        by_name[name]["type"] = "classification"
