"""One run's figure in a series' comparison (``series.stats``, ``series.significance``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Observation:
    """One run's figure of the metric, and its per-query latencies when it has them."""

    value: float
    raw: Sequence[float] | None = None
