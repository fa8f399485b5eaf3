"""A series' threshold as data (``Threshold``): what ``series show`` and ``series threshold
list`` read without the statistics (``stats``, which imports NumPy, judges by it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["lower", "higher"]
TestName = Literal["relative", "t", "mann-whitney", "exact", "tolerance"]


@dataclass(frozen=True, slots=True)
class Threshold:
    """What may change in one metric of a series, and the test that decides."""

    metric: str
    test: TestName
    direction: Direction
    """Which way is better: ``lower`` (latency) or ``higher`` (throughput, accuracy)."""
    max_change: float | None = None
    """Relative bound: 0.05 = may worsen by at most 5% (``relative``); for ``t`` and
    ``mann-whitney`` the least change that counts as a regression."""
    alpha: float = 0.01
    """Significance of ``t`` and ``mann-whitney`` (one-sided, in the worse direction)."""
    window: int = 10
    """How many of the latest past runs the test looks at."""
    min_runs: int = 3
    """Fewer past runs than this: inconclusive."""
    tolerance: float | None = None
    """Absolute bound in the metric's unit, for ``tolerance``."""
