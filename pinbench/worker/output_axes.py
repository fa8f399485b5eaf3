"""An output's ``transpose`` step, applied to the model's raw answer before any task reads it.

A model may give an output whose first axis is not the batch's: a CTC recogniser exported
time-first gives ``(T, N, C)``. Its declared ``transpose: {perm: [1, 0, 2]}`` says how it is
read: axis ``j`` of what the task sees is axis ``perm[j]`` of the answer (NumPy's and ONNX's
rule), so the answer's batch axis is ``perm[0]``.

Nothing of it is in a timed region: a batch's answer is split into its samples along that
axis (``scenarios.run_scenario``'s ``batch_axes``) where the answers are kept, and each
sample's answer is reordered (``reorder``, a NumPy view) after the scenario, as the first
answer is before anything is timed. An answer whose rank is not the perm's length is refused
there, naming the output, before the scenario starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.ports import Output

Array = npt.NDArray[np.generic]


class TransposeMismatch(UserError):
    """An answer whose axes cannot be reordered as its output's ``transpose`` step says."""

    def __init__(self, *, output: str, shape: tuple[int, ...], perm: tuple[int, ...]) -> None:
        super().__init__(
            f"output {output!r} has shape {list(shape)} ({len(shape)} axes) but its transpose "
            f"step's perm {list(perm)} reorders {len(perm)}: give one entry per axis of the "
            "model's own output"
        )
        self.output = output
        self.shape = shape
        self.perm = perm


def perms(outputs: Sequence[Output]) -> dict[str, tuple[int, ...]]:
    """Each declared output's ``transpose`` perm, by its answer's key (``str`` of its name);
    outputs without one are left out."""
    found = {}
    for out in outputs:
        for step in out.steps:
            if step.transpose is not None:
                found[str(out.name)] = tuple(step.transpose.perm)
    return found


def batch_axes(outputs: Sequence[Output]) -> dict[str, int]:
    """Where each transposed output's answer holds the batch: the axis its perm puts first."""
    return {name: perm[0] for name, perm in perms(outputs).items()}


def reorder(answer: Mapping[str, Array], found: Mapping[str, tuple[int, ...]]) -> dict[str, Array]:
    """``answer`` with each output in ``found`` transposed by its perm (a view), the others as
    they are; ``TransposeMismatch`` where an output's rank is not its perm's length."""
    out = dict(answer)
    for name, perm in found.items():
        if name not in out:
            continue  # an output the predictor did not give is refused where it is read
        value = np.asarray(out[name])
        if value.ndim != len(perm):
            raise TransposeMismatch(output=name, shape=tuple(value.shape), perm=perm)
        out[name] = np.transpose(value, perm)
    return out


def one_sample(value: Array, index: int, axis: int) -> Array:
    """Sample ``index`` of a batch's answer whose batch axis is ``axis`` (kept, of length 1)."""
    where: list[slice | int] = [slice(None)] * value.ndim
    where[axis] = slice(index, index + 1)
    return value[tuple(where)]
