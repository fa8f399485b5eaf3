"""A model's declared ``format`` against what its files are by their own bytes
(``artifacts.model_formats``), at publish: a manifest that can never run is refused then,
naming the file, what it is and the format to declare, not at run time after preprocessing.

Each format the run loads by a file's name (``LOADS``: the suffixes its predictor picks) has
that file checked: its bytes must be the declared format (``keras`` a Keras 3 archive,
``keras-h5`` HDF5, ``torch-pickle`` a pickled module, not a state dict...). Where no file
has such a name, or (``torchscript``) none is one by its content, a file that is another
model format is named. Formats with checks of their own before this one's verdict would add
anything (``safetensors``, ``hf-folder``: ``registry.formats``) and MLModelScope's formats,
which nothing runs, are left to those.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pinbench.artifacts.model_formats import (
    PICKLE_SUFFIXES,
    WHAT,
    Found,
    identify,
    pickle_refusal,
)
from pinbench.registry.manifest import ModelManifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.processing_code import WEIGHTS_SUFFIXES
from pinbench.registry.sourcing import FileProblem

LOADS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "onnx": ((".onnx",), frozenset({"onnx"})),
    "keras": ((".keras",), frozenset({"keras"})),
    "keras-h5": ((".h5", ".hdf5"), frozenset({"keras-h5"})),
    "tflite": ((".tflite",), frozenset({"tflite"})),
    "savedmodel": (("saved_model.pb",), frozenset({"savedmodel"})),
    "torch-export": ((".pt2",), frozenset({"torch-export"})),
    "torch-pickle": (PICKLE_SUFFIXES, frozenset({"torch-pickle"})),
    "torchscript": ((".pt", ".ts", ".torchscript", ".jit", ".pth"), frozenset({"torchscript"})),
    "torch-state-dict": (WEIGHTS_SUFFIXES, frozenset({"torch-state-dict", "safetensors"})),
}
"""Each checked format: the names of the files its run loads (a suffix, or a whole name), and
the formats those files' bytes may be."""
OWN_CHECKS = frozenset({"onnx", "torchscript", "torch-export"})
"""Formats whose own checks (``registry.formats``) name a file that is no model at all."""


class DeclaredFormatMismatch(FileProblem):
    """A model file whose bytes are not the format its manifest declares."""

    def __init__(self, *, path: str, declared: str, found: Found | None) -> None:
        if found is None:
            reason = (
                f"declared format {declared}, but its bytes are none of the model formats "
                f"pinbench recognises ({', '.join(sorted(WHAT))})"
            )
        elif found.format == "torch-pickle":
            reason = f"declared format {declared}, but it is {pickle_refusal(found, path)}"
        else:
            reason = f"is {found.what}: declare format: {found.format}, not {declared}"
        super().__init__(path=path, reason=reason)
        self.declared = declared
        self.found = None if found is None else found.format
        self.globals = () if found is None else found.globals


def _loaded(path: str, names: tuple[str, ...]) -> bool:
    name = PurePosixPath(path).name
    return name in names or name.lower().endswith(tuple(n for n in names if n.startswith(".")))


def check_declared_format(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse ``manifest`` when a file its run loads is another format than declared, or no
    file is and another one is a model; ``where`` gives each file's verified bytes."""
    rule = LOADS.get(manifest.format)
    if rule is None:
        return
    names, allowed = rule
    found = {
        f.path: identify(where(f), PurePosixPath(f.path).name)
        for f in manifest.files
        if _loaded(f.path, names)
    }
    if manifest.format == "torchscript" and any(
        (fmt := identify(where(f), PurePosixPath(f.path).name)) is not None
        and fmt.format == "torchscript"
        for f in manifest.files
    ):
        return  # found by its content whatever its name (``registry.formats`` counts them)
    for path, what in found.items():
        if what is not None and what.format in allowed:
            continue
        if what is None and manifest.format in OWN_CHECKS:
            continue  # those checks say what the file is not
        raise DeclaredFormatMismatch(path=path, declared=manifest.format, found=what)
    if found:
        return
    for entry in manifest.files:
        what = identify(where(entry), PurePosixPath(entry.path).name)
        if what is not None and what.format not in allowed:
            raise DeclaredFormatMismatch(path=entry.path, declared=manifest.format, found=what)
