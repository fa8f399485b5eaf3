"""Which file of a ``torchscript`` model is the TorchScript archive: the one whose bytes are one
(``safetensors.recognise``: a zip with ``ROOT/data.pkl`` and ``ROOT/code/``), whatever its name
(``.pt``, ``.ts``, ``.jit``, ``.pth``...). Only the zip's directory is read; nothing is loaded.
``pinbench manifest model``, publishing and the torch predictor all find it by this rule."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pinbench.artifacts.safetensors import recognise
from pinbench.errors import UserError


class NotOneTorchScript(UserError):
    """A ``torchscript`` model whose files hold no TorchScript archive, or several."""

    def __init__(self, *, found: list[str], files: list[str]) -> None:
        what = f"{len(found)} ({', '.join(found)})" if found else "none"
        super().__init__(
            f"format torchscript loads exactly one TorchScript archive (torch.jit.save), "
            f"recognised by its content; among the files {files} it found {what}"
        )
        self.found = found
        self.files = files


def torchscript_file(files: Mapping[str, Path]) -> str:
    """The path (a key of ``files``) of the one file whose bytes are a TorchScript archive."""
    found = [name for name, path in sorted(files.items()) if recognise(path) == "torchscript"]
    if len(found) != 1:
        raise NotOneTorchScript(found=found, files=sorted(files))
    return found[0]
