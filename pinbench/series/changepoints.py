"""Where a metric shifted along a series: ``ruptures``' ``KernelCPD``, one permutation-tested
split at a time.

What runs is a kernel change-point search, not E-Divisive: it borrows E-Divisive's shape
(Matteson and James 2014; the method MongoDB's performance CI runs, through its
``signal-processing-algorithms``: split a series where two segments differ most, keep the split
when a permutation test says it is significant, go on in each part) but not its energy
statistic. The split is searched by ``ruptures``' ``KernelCPD`` with a Gaussian (rbf) kernel,
gamma by the median heuristic: a kernel change-point search in C, whose bounded kernel keeps one
wild value from dominating the cost as a squared error would (decision 257). The statistic is
the kernel cost the best split saves; its p-value is the share of shuffles of the segment whose
best split saves as much (199 shuffles at least, ``2 / significance`` when that is more, never
more than ``MAX_SHUFFLES``; seeded by the segment's position, so the answer is the same every
time). A split is kept when p < ``significance``; each side must hold ``min_size`` runs, which
is what lets one outlier pass: it cannot be a segment alone.

The work is bounded (decision 257): ``significance`` is at least ``bounds.CHANGE_SIGNIFICANCE``'s
0.001 (1,999 shuffles a split), shuffles are capped at ``MAX_SHUFFLES``, so the smallest
p-value reported is ``1 / (MAX_SHUFFLES + 1)``: a smaller one reads as that bound. A
``deadline`` (``time.monotonic()``) stops a search that runs past it with
``ChangePointsTimedOut``.

A slow drift is found as a change point inside it, where the runs before and after differ
most. ``ChangePoint.change`` is relative to the mean before; a mean of zero there is refused.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench import bounds
from pinbench.series.errors import InvalidSeries, SeriesError

PERMUTATIONS = 199
"""Shuffles per test at least (E-Divisive's customary count); more when ``significance``
is so small that 199 could not reach it."""

MAX_SHUFFLES = 9_999
"""Shuffles per test at most: a p-value below 1 / 10,000 is reported as 1 / 10,000."""


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """A shift in a series: where it starts and the segments' means either side."""

    index: int
    """Position in the series of the first run after the change."""
    before: float
    after: float
    change: float
    """Relative: (after - before) / |before|."""
    p_value: float | None = None
    """The permutation test's p-value of the split, within the segment it was found in."""


class InvalidChangePointSettings(SeriesError):
    """``change_points``' settings out of bounds: names the setting and what it must be."""

    def __init__(self, *, setting: str, value: str, reason: str) -> None:
        super().__init__(f"change points: {setting} = {value}: {reason}")
        self.setting = setting
        self.value = value
        self.reason = reason


class ChangePointsTimedOut(SeriesError):
    """The search ran past its deadline; nothing is reported."""

    def __init__(self, *, seconds: float) -> None:
        super().__init__(f"change points: the search ran past its {seconds:g} s")
        self.seconds = seconds


def change_points(
    values: Sequence[float] | npt.NDArray[np.float64],
    *,
    significance: float = 0.01,
    min_size: int = 2,
    deadline: float | None = None,
) -> list[ChangePoint]:
    """The series' change points, in order of position; ``ChangePointsTimedOut`` past
    ``deadline`` (a ``time.monotonic()`` value)."""
    for setting, bound, value in (
        ("significance", bounds.CHANGE_SIGNIFICANCE, significance),
        ("min_size", bounds.SEGMENT_RUNS, min_size),
    ):
        kind = (int,) if setting == "min_size" else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind) or not bound.holds(value):
            raise InvalidChangePointSettings(
                setting=setting, value=repr(value), reason=f"must be {bound.text()}"
            )
    x = np.asarray(values, dtype=np.float64)
    for i, v in enumerate(x):
        if not math.isfinite(v):
            raise InvalidSeries(index=i, reason=f"value {values[i]!r} is not finite")
    shuffles = min(MAX_SHUFFLES, max(PERMUTATIONS, math.ceil(2.0 / significance) - 1))
    started = time.monotonic()
    splits: dict[int, float] = {}
    pending = [(0, len(x))]
    while pending:
        start, end = pending.pop()
        if end - start < 2 * min_size:
            continue
        segment = x[start:end]
        if np.ptp(segment) == 0:
            continue
        at, saved = _best_split(segment, min_size)
        p = _p_value(segment, saved, min_size, shuffles, significance, (start, end), deadline)
        if p is None:
            raise ChangePointsTimedOut(seconds=round(time.monotonic() - started, 1))
        if p < significance:
            splits[start + at] = p
            pending += [(start, start + at), (start + at, end)]
    return _points(x, splits)


def _best_split(segment: npt.NDArray[np.float64], min_size: int) -> tuple[int, float]:
    """Where one split saves the most kernel cost in ``segment``, and how much."""
    import ruptures

    algo: Any = ruptures.KernelCPD(kernel="rbf", min_size=min_size, jump=1).fit(segment)
    bkps = algo.predict(n_bkps=1)
    whole = float(algo.cost.sum_of_costs([len(segment)]))
    return int(bkps[0]), whole - float(algo.cost.sum_of_costs(bkps))


def _p_value(
    segment: npt.NDArray[np.float64],
    saved: float,
    min_size: int,
    shuffles: int,
    significance: float,
    seed: tuple[int, int],
    deadline: float | None,
) -> float | None:
    """Permutation p-value of ``saved``: (1 + shuffles saving as much) / (1 + shuffles).
    Stops as soon as the answer cannot fall under ``significance``; None past ``deadline``."""
    rng = np.random.default_rng(list(seed))
    hits = 0
    enough = significance * (shuffles + 1) - 1  # more hits than this: p >= significance
    for done in range(1, shuffles + 1):
        if deadline is not None and time.monotonic() > deadline:
            return None
        if _best_split(rng.permutation(segment), min_size)[1] >= saved * (1 - 1e-12):
            hits += 1
            if hits > enough:
                return (1 + hits) / (1 + done)
    return (1 + hits) / (1 + shuffles)


def _points(x: npt.NDArray[np.float64], found: dict[int, float]) -> list[ChangePoint]:
    splits = sorted(found)
    edges = [0, *splits, len(x)]
    out = []
    for i, at in enumerate(splits):
        before = float(np.mean(x[edges[i] : at]))
        after = float(np.mean(x[at : edges[i + 2]]))
        if before == 0.0:
            raise InvalidSeries(
                index=at,
                reason="the mean before this change point is 0: no relative change is defined",
            )
        change = (after - before) / abs(before)
        out.append(ChangePoint(at, before, after, change, found[at]))
    return out
