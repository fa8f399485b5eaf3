"""An attention mask made at each call (``Input.mask_of``, issue 86): 1 over each sample's own
length, 0 over the padding its batch added (``ragged.Ragged`` with ``pad_batch``), as
transformers' feature extractors and a pipeline's collate make it. Sliced as the scenario
slices any input, alongside the input it masks (``NamedInputs`` slices both with one index),
so the two always agree on the batch's longest length."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.worker.ragged import Ragged

Array = npt.NDArray[np.generic]


class LengthMask:
    """The mask of ``target`` (a stacked array, every sample of one length, or a
    ``Ragged``), in ``dtype``."""

    __slots__ = ("dtype", "shape", "target")

    def __init__(self, target: Array | Ragged, dtype: str) -> None:
        self.target = target
        self.dtype = np.dtype(dtype)
        self.shape: tuple[int, ...] = (len(target),)
        """Only the sample count: what the scenario runner reads."""

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: Any) -> Array:
        if isinstance(index, int | np.integer):
            index = [int(index)]  # a batch of one, as a slice of one gives it
        if isinstance(self.target, np.ndarray):
            rows = self.target[index]
            return np.ones((len(rows), rows.shape[-1]), dtype=self.dtype)
        lengths = self.target.lengths(index)
        out = np.zeros((len(lengths), max(lengths, default=0)), dtype=self.dtype)
        for row, n in zip(out, lengths, strict=True):
            row[:n] = 1
        return out

    def samples(self) -> Array:
        """Each sample's mask alone (all ones at its own length): a scorer's entry, one array
        where every sample has one length."""
        if isinstance(self.target, np.ndarray):
            return self[0 : len(self)]
        out = np.empty(len(self), dtype=object)
        for i in range(len(self)):
            out[i] = self[i : i + 1][0]
        return out
