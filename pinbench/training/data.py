"""What a training run is handed: the start model's files and the arrays to train on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.training.errors import InvalidData


@dataclass(frozen=True, slots=True)
class TrainModel:
    """The start model: ``format`` (``safetensors`` for PyTorch, with ``architecture``
    naming a constructor of ``worker.predictors.torch.architectures``; ``keras`` for
    TensorFlow) and its files by path inside the artifact (``paths``, as
    ``ModelFiles.files``)."""

    format: str
    architecture: str | None
    paths: dict[str, Path]

    def single(self, suffix: str) -> Path:
        """The one file whose artifact path ends in ``suffix``; ValueError otherwise."""
        found = [p for name, p in sorted(self.paths.items()) if name.endswith(suffix)]
        if len(found) != 1:
            raise ValueError(
                f"expected exactly one {suffix} file among the model's files, "
                f"found {sorted(self.paths) or 'none'}"
            )
        return found[0]


@dataclass(frozen=True, slots=True)
class TrainData:
    """Inputs (float32, already in the model's input layout, e.g. ``(N, 1, 8, 8)``) and
    int64 class labels, for the training and the validation split."""

    x_train: npt.NDArray[np.float32]
    y_train: npt.NDArray[np.int64]
    x_val: npt.NDArray[np.float32]
    y_val: npt.NDArray[np.int64]


def check_arrays(data: TrainData) -> None:
    """Types, ranks and lengths, before any framework starts."""
    for field, x in (("x_train", data.x_train), ("x_val", data.x_val)):
        _array(field, x)
        if x.dtype != np.float32:
            raise InvalidData(field=field, reason=f"must be float32, got {x.dtype}")
        if x.ndim < 2 or len(x) == 0:
            raise InvalidData(
                field=field, reason=f"must hold at least one sample (N, ...), got shape {x.shape}"
            )
        if not np.isfinite(x).all():
            raise InvalidData(field=field, reason="holds NaN or infinite values")
    if data.x_train.shape[1:] != data.x_val.shape[1:]:
        raise InvalidData(
            field="x_val",
            reason=f"samples have shape {data.x_val.shape[1:]}, but x_train's have "
            f"{data.x_train.shape[1:]}",
        )
    for field, y, x in (("y_train", data.y_train, data.x_train), ("y_val", data.y_val, data.x_val)):
        _array(field, y)
        if y.dtype != np.int64 or y.ndim != 1:
            raise InvalidData(
                field=field, reason=f"must be int64 labels (N,), got {y.dtype} {y.shape}"
            )
        if len(y) != len(x):
            x_name = "x" + field[1:]
            raise InvalidData(
                field=field, reason=f"has {len(y)} labels but {x_name} has {len(x)} samples"
            )


def check_labels(data: TrainData, classes: int) -> None:
    """Every label names one of the model's ``classes`` outputs."""
    for field, y in (("y_train", data.y_train), ("y_val", data.y_val)):
        low, high = int(y.min()), int(y.max())
        if low < 0 or high >= classes:
            raise InvalidData(
                field=field,
                reason=f"labels run from {low} to {high}, but the model has {classes} output "
                f"classes (labels 0 to {classes - 1})",
            )


def _array(field: str, value: Any) -> None:
    if not isinstance(value, np.ndarray):
        raise InvalidData(field=field, reason=f"must be a NumPy array, got {type(value).__name__}")
