"""Options every predictor takes, validated at the edge."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pinbench.registry.manifest_parts import check_relative_path
from pinbench.registry.ports import Input, Output
from pinbench.registry.processing_code import Builder

Device = Literal["cpu", "cuda"]


@dataclass(frozen=True, slots=True)
class PredictorOptions:
    device: Device = "cpu"
    batch_size: int = 1
    threads: int | None = None
    """Intra-op threads; None lets the framework decide."""
    warmup: int = 10
    """Untimed predictions before measurement starts."""
    graph_optimization: str | None = None
    """onnxruntime's graph optimization level (``disabled``, ``basic``, ``extended``, ``all``)
    from a request's ``transform``; None leaves the framework's default. Only onnxruntime takes
    one: a request naming it for another framework is refused when it is parsed."""

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be one of cpu, cuda; got {self.device!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {self.warmup}")


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """A verified model: its files by path inside the artifact, and how to load them."""

    files: dict[str, Path]
    format: str
    architecture: str | None = None
    trusted: bool = False
    inputs: tuple[Input, ...] = ()
    """The manifest's declared inputs: ``open`` binds each to the model's own, by name or
    index, and refuses a mismatch (``base.bind_inputs``)."""
    outputs: tuple[Output, ...] = ()
    """The manifest's declared outputs: ``predict`` returns these, by name, in this order."""
    builder: Builder | None = None
    """A ``torch-state-dict`` model's builder: the publisher's code that makes its module."""
    allow_code: bool = False
    """The run's own consent to run ``builder`` (``--allow-code``; never the lockfile's)."""
    sha256: dict[str, str] = field(default_factory=dict)
    """Each file's pinned sha256 (the lockfile's): code is executed only from bytes that
    match it, read again as they are executed."""

    def layout(self, root: Path) -> Path:
        """Symlinks under ``root`` that give each blob its artifact path; return ``root``.

        For loaders that need file names or a directory tree (``.keras``, SavedModel, ONNX
        with external data). ``root`` is scratch: a loader never writes beside a blob.
        """
        for name, blob in self.files.items():
            check_relative_path(name)  # never a link outside root, whatever the caller passed
            link = root / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(blob.resolve())
        return root

    def single(self, suffixes: tuple[str, ...]) -> tuple[str, Path]:
        """The one file whose artifact path ends in ``suffixes``: (its path, its blob)."""
        found = [(name, p) for name, p in sorted(self.files.items()) if name.endswith(suffixes)]
        if len(found) != 1:
            raise ValueError(
                f"expected exactly one model file ending in {', '.join(suffixes)}, "
                f"found {sorted(self.files)}"
            )
        return found[0]
