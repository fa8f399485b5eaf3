"""One run's figure in a series' comparison (``series.stats``, ``series.significance``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Observation:
    """One run's figure of the metric, and its per-query latencies when it has them."""

    value: float
    raw: Sequence[float] | npt.NDArray[np.float64] | None = None
