"""What ``runs parity`` hands a task and gets back (``Task.parity``), and the comparison of
raw output tensors that a task without its own gives.

Parity is Deep500's "verifiable": the same weights in two frameworks (or two exports of one
model) should score the same. A task compares what it scores (top-1 classes, matched boxes,
class maps, embeddings), not the raw tensors, so two exports whose raw outputs differ in
form (logits against an argmax, a packed output against separate ones) still compare.
"""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.registry.lockfile import LockedDataset, LockedModel

REL_FLOOR = 1e-3
"""A relative difference is taken against the reference with its denominator floored at this
share of the reference's largest magnitude, so that elements near zero do not make it
meaningless."""
REL_TOLERANCE = 1e-3
"""Raw outputs agree when no element differs by more than this, relatively (floored as
``REL_FLOOR`` says): far above float32 reordering (about 1e-6), far below a changed model."""


class Incomparable(UserError):
    """Two runs whose recorded outputs cannot be compared as their task compares them."""

    def __init__(self, *, run: str, reason: str) -> None:
        super().__init__(f"cannot compare run {run[:8]} with the reference: {reason}")
        self.run = run
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Recorded:
    """One succeeded accuracy run as it was recorded: what a task's parity reads."""

    run: str
    outputs: npt.NDArray[Any]
    """The run's recorded outputs (``Scored.outputs``), as stored (samples on axis 0)."""
    outputs_name: str | None
    """Which model output they are (``Scored.outputs_name``; None in runs that predate it)."""
    metrics: dict[str, float]
    details: dict[str, Any]
    """The run's recorded details (``Scored.details`` among them)."""
    model: LockedModel
    dataset: LockedDataset


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure of a comparison: its key in ``--json``, its column label, its value."""

    name: str
    label: str
    value: float
    unit: str = "value"
    """``count`` (a whole number), ``fraction`` (4 decimals) or ``value`` (3 significant)."""

    def show(self) -> str:
        if self.unit == "count":
            return f"{self.value:.0f}"
        if self.unit == "fraction":
            return f"{self.value:.4f}"
        return f"{self.value:.3g}"


@dataclass(frozen=True, slots=True)
class Agreement:
    """What a task's parity found: its figures, and whether the runs agree by its rule."""

    figures: tuple[Figure, ...]
    agrees: bool
    rule: str
    """What "agree" means for the task, for people (``runs parity`` prints it)."""

    def figure(self, name: str) -> float:
        return next(f.value for f in self.figures if f.name == name)


def tensor_difference(
    reference: npt.NDArray[Any], other: npt.NDArray[Any], *, run: str
) -> tuple[float, float]:
    """Max absolute and max relative difference of two arrays of one shape, element by
    element (relative to the reference, floored as ``REL_FLOOR`` says). Equal elements differ
    by 0 (two equal infinities too); an element that is NaN on one side, or infinite and
    unequal, differs by infinity."""
    ref = np.asarray(reference, dtype=np.float64)
    out = np.asarray(other, dtype=np.float64)
    if ref.shape != out.shape:
        raise Incomparable(
            run=run,
            reason=f"outputs of shape {list(out.shape)}, the reference's are {list(ref.shape)}",
        )
    if ref.size == 0:
        return 0.0, 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(ref == out, 0.0, np.abs(out - ref))
    diff = np.where(np.isnan(diff), np.inf, diff)
    finite = np.abs(ref[np.isfinite(ref)])
    floor = REL_FLOOR * float(finite.max()) if finite.size else 0.0
    with np.errstate(invalid="ignore"):
        rel = diff / np.maximum(np.abs(ref), max(floor, np.finfo(np.float64).tiny))
    rel = np.where(diff == 0.0, 0.0, np.where(np.isnan(rel), np.inf, rel))
    return float(diff.max()), float(rel.max())


def difference_figures(abs_diff: float, rel_diff: float) -> list[Figure]:
    return [
        Figure("max_abs_diff", "max abs diff", abs_diff),
        Figure("max_rel_diff", "max rel diff", rel_diff),
    ]


def raw_parity(reference: Recorded, other: Recorded) -> Agreement:
    """The raw recorded outputs compared element by element: the parity of a task that
    declares no comparison of its own. They agree when no element's relative difference
    exceeds ``REL_TOLERANCE``."""
    abs_diff, rel_diff = tensor_difference(reference.outputs, other.outputs, run=other.run)
    return Agreement(
        (
            *difference_figures(abs_diff, rel_diff),
            Figure("samples", "samples", float(len(reference.outputs)), "count"),
        ),
        rel_diff <= REL_TOLERANCE,
        f"raw outputs within a relative {REL_TOLERANCE:g} of the reference's",
    )


def same_samples(reference: Sized, other: Sized, *, run: str) -> None:
    """Refuse two records of another number of samples (the dataset is the same, so the
    scenario's ``sample_count`` differed)."""
    if len(reference) != len(other):
        raise Incomparable(
            run=run,
            reason=f"it recorded {len(other)} samples, the reference {len(reference)} (a "
            "different sample_count): compare runs of the same samples",
        )
