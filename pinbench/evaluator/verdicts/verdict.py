"""Did a rerun reproduce the original? Inputs, accuracy, and latency distributions.

Per-query latencies within one run are not independent of the run: process start, thread
placement, memory layout and clock frequency move a whole run at once, and on a shared
two-core machine runs of a microsecond-scale model differ by 5-60% from one another. So the
unit of replication is the run. A rerun measures the lockfile ``n`` times (3 by default); the
original's median is then judged against a 99% prediction interval for one more run's median,
built from the reruns' medians on a log scale (Student's t with ``n - 1`` degrees of freedom,
spread floored at ``NOISE_FLOOR``). The two-sided Mann-Whitney U test on the pooled raw
latencies and the ratio of medians are reported too, and a difference counts only when it is
outside the interval, significant (p < ``ALPHA``) and at least ``MIN_EFFECT`` in size (the
larger median at least ``1 + MIN_EFFECT`` times the smaller: a slowdown and a speed-up of
the same fold count alike, decision 266). With a
single rerun there is no run-to-run spread to go on and the last two conditions decide.

No difference is not the same as reproduced: when the reruns' medians disagree with each other
by more than ``BAND`` (10% by default: the largest over the smallest), the interval they give
is too wide to vouch for anything, so the latency verdict is *inconclusive* and says what would
settle it; so it is, too, when the original's median lies further than the band from the
reruns' though no difference could be shown (a wide interval, or one rerun). A difference
outside even a wide interval is still a difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

ALPHA = 0.01
MIN_EFFECT = 0.05
NOISE_FLOOR = 0.01
"""The least run-to-run spread assumed (1%), however alike the reruns happen to be."""
BAND = 0.10
"""The most the reruns' medians may disagree (largest / smallest - 1) for "reproduced"."""
# Two-sided 99% quantiles of Student's t (0.995), by degrees of freedom.
T_995 = {
    1: 63.657,
    2: 9.925,
    3: 5.841,
    4: 4.604,
    5: 4.032,
    6: 3.707,
    7: 3.499,
    8: 3.355,
    9: 3.250,
    10: 3.169,
    15: 2.947,
    20: 2.845,
    30: 2.750,
}


def t_995(df: int) -> float:
    """The 0.995 quantile of Student's t, conservative between tabulated values."""
    if df < 1:
        raise ValueError("degrees of freedom must be >= 1")
    return T_995[max(d for d in T_995 if d <= df)]


@dataclass(frozen=True, slots=True)
class LatencyComparison:
    median_ratio: float
    """Median of the reruns' medians ÷ the original's median."""
    u: float
    p_value: float
    reproduced: bool
    original_median: float
    rerun_medians: list[float]
    interval: tuple[float, float] | None
    """99% prediction interval for a run's median, from the reruns (two or more)."""
    band: float = BAND

    @property
    def disagreement(self) -> float | None:
        """How far apart the reruns' medians are: the largest / the smallest, minus 1."""
        if len(self.rerun_medians) < 2:
            return None
        return max(self.rerun_medians) / min(self.rerun_medians) - 1.0

    @property
    def inconclusive(self) -> bool:
        """No difference shown, but nothing to vouch for a reproduction either: the reruns
        disagree with each other by more than the band (their interval is too wide), or the
        original's median is further than the band from theirs (a wide interval or a single
        rerun let it through)."""
        if not self.reproduced:
            return False
        apart = self.disagreement is not None and self.disagreement > self.band
        return apart or abs(self.median_ratio - 1.0) > self.band

    @property
    def outcome(self) -> str:
        """``reproduced``, ``changed`` or ``inconclusive``."""
        if self.inconclusive:
            return "inconclusive"
        return "reproduced" if self.reproduced else "changed"

    @property
    def spread(self) -> float | None:
        """Run-to-run spread of the reruns' medians (relative standard deviation)."""
        import numpy as np

        if len(self.rerun_medians) < 2:
            return None
        return float(np.std(np.log(self.rerun_medians), ddof=1))

    def describe(self) -> str:
        change = self.median_ratio - 1.0
        runs = len(self.rerun_medians)
        if self.interval is not None:
            lo, hi = self.interval
            where = (
                f"original's framework-call median {_t(self.original_median)}; "
                f"{runs} reruns' 99% interval {_t(lo)} - {_t(hi)}, "
                f"run-to-run spread {self.spread:.1%}"
            )
        else:
            where = f"original's framework-call median {_t(self.original_median)}, 1 rerun"
        from pinbench.run_figures import p_said

        stats = f"median ratio {self.median_ratio:.3f}, Mann-Whitney {p_said(self.p_value)}"
        if self.inconclusive:
            return f"latency inconclusive: {self._undecided(change, stats)}. " + SETTLE
        if self.reproduced:
            return f"latency reproduced within noise ({where}; {stats})"
        direction = "slower" if change > 0 else "faster"
        return f"{direction} by {abs(change):.1%} ({where}; {stats})"

    def _undecided(self, change: float, stats: str) -> str:
        """Why an inconclusive verdict is neither reproduced nor changed, in that order: what
        keeps the reruns from vouching for the original, then why no difference counts."""
        original = f"the original's framework-call median {_t(self.original_median)}"
        if self.disagreement is not None and self.disagreement > self.band:
            why = (
                f"the {len(self.rerun_medians)} reruns' medians disagree with each other by "
                f"{self.disagreement:.0%}, more than the {self.band:.0%} band, so they cannot "
                "vouch for the original"
            )
        else:
            why = (
                f"the reruns' median is {abs(change):.0%} from the original's, more than the "
                f"{self.band:.0%} band"
            )
        if self.interval is None:
            shown = f"{original} was judged by 1 rerun ({stats})"
        else:
            lo, hi = self.interval
            shown = (
                f"{original} lies inside the {len(self.rerun_medians)} reruns' 99% interval "
                f"{_t(lo)} - {_t(hi)} for a run's median ({stats}: a test over queries, "
                "which run-to-run noise moves together)"
            )
        return f"{why}; no difference is shown either: {shown}"


SETTLE = (
    "To settle it: more reruns (--repeat), a longer min_duration_ms, fewer threads, or a "
    "quieter machine"
)


def _t(ns: float) -> str:
    from pinbench.run_figures import fmt_ns

    return fmt_ns(ns)


def mann_whitney(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test; returns (U of ``a``, p-value)."""
    import numpy as np

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


def prediction_interval(medians: Sequence[float]) -> tuple[float, float]:
    """99% prediction interval for one more run's median, from two or more runs' medians."""
    import numpy as np

    logs = np.log(np.asarray(medians, dtype=np.float64))
    n = len(logs)
    spread = max(float(np.std(logs, ddof=1)), math.log1p(NOISE_FLOOR))
    half = t_995(n - 1) * spread * math.sqrt(1.0 + 1.0 / n)
    centre = float(np.mean(logs))
    return math.exp(centre - half), math.exp(centre + half)


def compare_latencies(
    original: npt.NDArray[Any],
    reruns: Sequence[npt.NDArray[Any]],
    *,
    band: float = BAND,
    min_effect: float = MIN_EFFECT,
) -> LatencyComparison:
    """``min_effect``: the least change of the median counted as a difference, as a fold
    (``bisect --min-effect``: on a busy machine, a step's own effect can be told from the
    machine's by its size)."""
    import numpy as np

    if not reruns:
        raise ValueError("compare_latencies needs at least one rerun")
    m0 = float(np.median(original))
    medians = [float(np.median(r)) for r in reruns]
    ratio = float(np.median(medians)) / m0
    u, p = mann_whitney(np.concatenate(list(reruns)), original)
    differs = p < ALPHA and max(ratio, 1.0 / ratio) >= 1.0 + min_effect
    interval = None
    if len(reruns) >= 2:
        interval = prediction_interval(medians)
        differs = differs and not interval[0] <= m0 <= interval[1]
    return LatencyComparison(ratio, u, p, not differs, m0, medians, interval, band)


def accuracy_verdict(
    original: dict[str, Any], rerun: dict[str, Any], task: str | None = None
) -> str | None:
    """Whether the accuracy metrics are identical: every metric the run's task declares
    ``exact`` (``pinbench.tasks``); None when the original recorded none."""
    from pinbench.tasks.registry import exact_metrics, metric_of

    names = exact_metrics(original, task)
    if not names:
        return None

    def label(key: str) -> str:
        found = metric_of(key, task)
        if found is None or found.name == key:
            return found.label if found is not None else key
        return f"{found.label} ({key[len(found.name) + 1 :]})"

    differ = [m for m in names if original[m] != rerun.get(m)]
    shown = names[0]
    if not differ:
        return f"accuracy identical ({label(shown)} {rerun[shown]:.4f})"
    changes = ", ".join(
        f"{label(m)} {original[m]:.4f} then "
        + ("none" if rerun.get(m) is None else f"{rerun[m]:.4f}")
        for m in differ
    )
    return f"accuracy differs: {changes}"


def weights_verdict(original: dict[str, Any], reruns: list[dict[str, Any]]) -> str | None:
    """A training run's final weights: identical digests, or which rerun differs; None when
    the original recorded no weights (not a training run, or it failed before the end)."""

    def digest(run: dict[str, Any]) -> str | None:
        training = (run.get("details") or {}).get("training") or {}
        value = training.get("weights_sha256")
        return value if isinstance(value, str) else None

    want = digest(original)
    if want is None:
        return None
    differ = [r["id"][:8] for r in reruns if digest(r) != want]
    if not differ:
        return f"final weights identical (sha256 {want[:12]}) in every rerun"
    return f"final weights differ from sha256 {want[:12]} in reruns {', '.join(differ)}"


def time_to_accuracy_line(original: dict[str, Any], reruns: list[dict[str, Any]]) -> str | None:
    """Time to accuracy of the original and the reruns, side by side (None: not reached or
    not a training run)."""
    if "time_to_accuracy_s" not in original:
        return None
    times = [r.get("time_to_accuracy_s") for r in reruns]
    shown = ", ".join("not reached" if t is None else f"{t:.3f} s" for t in times)
    return f"time to accuracy: original {original['time_to_accuracy_s']:.3f} s, reruns {shown}"
