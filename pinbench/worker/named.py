"""Several model inputs as one batch: an array per input name, sliced together along the
sample axis, so the scenario runner slices them as it slices one array (a view per sample at
batch size 1, never a copy inside the timed region)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.generic]


class NamedInputs:
    """Arrays by input name (the manifest's names, in its order), same first dimension."""

    __slots__ = ("arrays",)

    def __init__(self, arrays: dict[str, Array]) -> None:
        counts = {name: a.shape[0] for name, a in arrays.items()}
        if len(set(counts.values())) > 1:
            raise ValueError(f"inputs differ in sample count: {counts}")
        self.arrays = arrays

    @property
    def shape(self) -> tuple[int, ...]:
        """Only the sample count: what the scenario runner reads."""
        return (next(iter(self.arrays.values())).shape[0],)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: Any) -> NamedInputs:
        return NamedInputs({name: a[index] for name, a in self.arrays.items()})

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}: {a.dtype.name}{list(a.shape)}" for n, a in self.arrays.items())
        return f"NamedInputs({shapes})"


def describe(batch: Array | NamedInputs) -> str:
    """A batch as an error names it: ``float32 [1, 8]``, or each input's by name."""
    if isinstance(batch, NamedInputs):
        return ", ".join(f"{n}: {a.dtype.name} {list(a.shape)}" for n, a in batch.arrays.items())
    return f"{batch.dtype.name} {list(batch.shape)}"
