"""A sample file of any kind as the bytes a model reads (``read_bytes``): its first
``length`` bytes as integers 0..255, in file order, one row per file; a shorter file padded at
its end with ``pad``; a longer one refused, naming the file, unless ``crop``. At most
``length + 1`` bytes of a file are read, so a file of any size costs one row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.registry.steps import ReadBytes
from pinbench.worker.pipeline_errors import PipelineError


def read_bytes(path: Path, step: ReadBytes, *, name: str) -> npt.NDArray[np.int32]:
    """The file at ``path`` as a ``(1, length)`` int32 row."""
    try:
        with path.open("rb") as f:
            data = f.read(step.length + 1)
    except OSError as exc:
        raise PipelineError(step="read_bytes", reason=f"cannot read {name}: {exc}") from None
    if len(data) > step.length and not step.crop:
        raise PipelineError(
            step="read_bytes",
            reason=f"sample {name} holds more than the {step.length} bytes read: raise "
            "`length`, or set `crop: true` to read its first bytes only",
        )
    kept = np.frombuffer(data[: step.length], dtype=np.uint8)
    row = np.full((1, step.length), step.pad, dtype=np.int32)
    row[0, : len(kept)] = kept
    return row
