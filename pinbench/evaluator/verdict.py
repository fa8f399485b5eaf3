"""Did a rerun reproduce the original? Inputs, accuracy, and latency distributions.

Latency distributions are compared with the two-sided Mann-Whitney U test (normal
approximation with tie correction) on the raw per-query latencies, and the ratio of medians.
A difference counts only when it is both significant (p < ``ALPHA``) and at least
``MIN_EFFECT`` in size: with tens of thousands of queries, p is tiny for differences nobody
would call a regression.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

ALPHA = 0.01
MIN_EFFECT = 0.05


@dataclass(frozen=True, slots=True)
class LatencyComparison:
    median_ratio: float
    """Rerun median ÷ original median."""
    u: float
    p_value: float
    reproduced: bool

    def describe(self) -> str:
        change = self.median_ratio - 1.0
        if self.reproduced:
            return (
                f"latency reproduced within noise (median ratio {self.median_ratio:.3f}, "
                f"Mann-Whitney p = {self.p_value:.3g})"
            )
        direction = "slower" if change > 0 else "faster"
        return (
            f"{direction} by {abs(change):.1%} "
            f"(median ratio {self.median_ratio:.3f}, p = {self.p_value:.3g})"
        )


def mann_whitney(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test; returns (U of ``a``, p-value)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    values = np.concatenate([a, b]).astype(np.float64)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=np.float64)
    sorted_values = values[order]
    # Average ranks over ties.
    _, first, counts = np.unique(sorted_values, return_index=True, return_counts=True)
    average = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(average, counts)
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    n = n1 + n2
    tie_term = float(np.sum(counts.astype(np.float64) ** 3 - counts))
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))) if n > 1 else 0.0
    if sigma == 0.0:
        return u1, 1.0
    z = (abs(u1 - n1 * n2 / 2.0) - 0.5) / sigma
    p = math.erfc(max(z, 0.0) / math.sqrt(2.0))
    return u1, min(1.0, p)


def compare_latencies(original: npt.NDArray[Any], rerun: npt.NDArray[Any]) -> LatencyComparison:
    ratio = float(np.median(rerun) / np.median(original))
    u, p = mann_whitney(rerun, original)
    reproduced = p >= ALPHA or abs(ratio - 1.0) < MIN_EFFECT
    return LatencyComparison(ratio, u, p, reproduced)


def accuracy_verdict(original: dict[str, Any], rerun: dict[str, Any]) -> str | None:
    if "top1" not in original or "top1" not in rerun:
        return None
    if original["top1"] == rerun["top1"] and original.get("top5") == rerun.get("top5"):
        return f"accuracy identical (top-1 {rerun['top1']:.4f})"
    return f"accuracy differs: top-1 {original['top1']:.4f} then {rerun['top1']:.4f}"
