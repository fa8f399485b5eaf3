"""Datasets as arrays: samples and labels from a verified lockfile's dataset files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.lockfile import LockedArtifact, LockedDataset


class DatasetError(UserError):
    def __init__(self, *, dataset: str, reason: str) -> None:
        super().__init__(f"dataset {dataset}: {reason}")
        self.dataset = dataset
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Samples:
    data: npt.NDArray[np.generic]
    labels: npt.NDArray[np.int64] | None


def load_samples(
    dataset: LockedDataset, artifact: LockedArtifact, paths: dict[str, Path]
) -> Samples:
    """Read the dataset's sample array and labels (``.npy``, never unpickled)."""
    ref = f"{dataset.name}@{dataset.version}"
    if dataset.data is None:
        raise DatasetError(dataset=ref, reason="its manifest names no sample file (`data`)")
    data = _npy(ref, paths[dataset.data.path])
    labels = None
    if dataset.labels.path is not None and dataset.labels.format == "class-index-npy":
        labels = _npy(ref, paths[dataset.labels.path]).astype(np.int64)
        if labels.shape != (data.shape[0],):
            raise DatasetError(
                dataset=ref,
                reason=f"{labels.size} labels for {data.shape[0]} samples",
            )
    return Samples(data, labels)


def _npy(ref: str, path: Path) -> npt.NDArray[np.generic]:
    try:
        array: npt.NDArray[np.generic] = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise DatasetError(dataset=ref, reason=f"cannot read {path.name}: {exc}") from None
    return array
