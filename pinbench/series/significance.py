"""The numbers a threshold's test sees, the p-value on them (scipy's, computed in plain
Python: ``pinbench.series.pvalues``), and how many reruns would settle an inconclusive
comparison (``pinbench.series.stats`` decides with them). Plain lists of floats throughout: a
gate loads neither NumPy nor scipy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.series.observation import Observation

MAX_POOLED = 100_000
"""The most per-query latencies a pooled test takes a side: past it, every k-th of the side's
values in order (``strided``), the same ones every time; the tests then run in a tenth of
a second at most whatever the window holds."""

MAX_RERUNS = 100
"""The most runs of the candidate ``reruns_needed`` will ask for; beyond, None (the window
itself is too noisy or too short to settle it)."""


def samples(
    window: Sequence[Observation], candidates: Sequence[Observation], *, pool: bool = True
) -> tuple[list[float], list[float], bool]:
    """Candidate and past samples: pooled per-query latencies when ``pool`` and every run,
    candidate or past, has them and none is empty (at most ``MAX_POOLED`` a side), else one
    summary figure a run."""
    raws = [o.raw for o in window]
    if pool and all(_has(c.raw) for c in candidates) and all(_has(r) for r in raws):
        a = [float(v) for c in candidates if c.raw is not None for v in c.raw]
        b = [float(v) for r in raws if r is not None for v in r]
        return strided(a), strided(b), True
    return figures(candidates), figures(window), False


def figures(runs: Sequence[Observation]) -> list[float]:
    """One summary figure a run."""
    return [float(o.value) for o in runs]


def median(values: Sequence[float]) -> float:
    """The middle value, or the mean of the two middle ones (as ``numpy.median``)."""
    ordered = sorted(values)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def _has(raw: Sequence[float] | None) -> bool:
    return raw is not None and len(raw) > 0


def strided(x: list[float], most: int = MAX_POOLED) -> list[float]:
    """``x`` when it holds at most ``most`` values, else ``most`` of them evenly spaced (the
    i-th is ``x[i * len(x) // most]``): deterministic, and every run of a pooled window keeps
    its share."""
    if len(x) <= most:
        return x
    return [x[i * len(x) // most] for i in range(most)]


def p_value(
    test: str, a: list[float], b: list[float], direction: str, pooled: bool
) -> float | None:
    """The one-sided p-value that ``a`` is worse than ``b`` (scipy's ``ttest_ind`` or
    ``mannwhitneyu``); None when undefined (every value the same)."""
    from pinbench.series.pvalues import mann_whitney, t_test

    both = a + b
    if max(both) == min(both):
        return None
    greater = direction == "lower"  # lower is better: worse is greater
    if test == "t":
        # Welch's t needs a spread on both sides: one candidate run has none, and then
        # Student's t (equal variances) is the prediction test for one more run. A window
        # of identical figures gives t = inf: p 0 or 1, a number.
        p = t_test(a, b, welch=pooled, greater=greater)
    else:
        p = mann_whitney(a, b, greater=greater)
    return p if math.isfinite(p) else None


def test_name(test: str, pooled: bool) -> str:
    if test == "t":
        return "Welch's t" if pooled else "Student's t"
    return "Mann-Whitney U"


def least_rank_p(k: int, n: int) -> float:
    """Mann-Whitney U's smallest one-sided p-value with ``k`` runs against ``n`` (every
    candidate beyond every past run: one ordering of the C(n + k, k))."""
    return 1.0 / math.comb(n + k, k)


def run_test(test: str, k: int, n: int, alpha: float) -> str | None:
    """The test on the runs' figures, ``k`` candidate runs against ``n`` past ones: the
    threshold's own (``t``: Student's t; ``mann-whitney``: Mann-Whitney U), or None when
    Mann-Whitney cannot reach ``alpha`` with so few runs (``least_rank_p``)."""
    if test == "mann-whitney" and least_rank_p(k, n) >= alpha:
        return None
    return test


def ranks_reach(k: int, n: int, alpha: float, *, most: int) -> tuple[int | None, int | None]:
    """What Mann-Whitney on the runs' figures lacks to reach ``alpha``: the fewest candidate
    runs (at most ``most``) with this window's ``n``, and the fewest past runs with ``k``
    candidate runs (None: none up to ``most``; at most 1,000 past runs)."""
    runs = next((j for j in range(k, most + 1) if least_rank_p(j, n) < alpha), None)
    past = next((m for m in range(n, 1001) if least_rank_p(k, m) < alpha), None)
    return runs, past


def reruns_needed(values: Sequence[float], change: float, have: int = 1) -> int | None:
    """How many more runs of the candidate would settle a change of ``change``, given the
    ``have`` runs of it judged already: the fewest ``k`` > ``have`` whose mean the rerun
    verdict's 99% interval (Student's t at the window's degrees of freedom, the window's log
    spread floored at ``NOISE_FLOOR``) would tell apart from the window's mean, less ``have``.
    None when no ``k`` up to ``have`` + ``MAX_RERUNS`` would."""
    from pinbench.evaluator.verdicts.verdict import NOISE_FLOOR, t_995

    if min(values) <= 0 or change <= -1.0:
        return None
    n = len(values)
    logs = [math.log(v) for v in values]
    mean = math.fsum(logs) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in logs) / (n - 1)) if n > 1 else math.nan
    spread = max(std, math.log1p(NOISE_FLOOR))
    effect = abs(math.log1p(change))
    for k in range(have + 1, have + MAX_RERUNS + 1):
        if t_995(n - 1) * spread * math.sqrt(1.0 / k + 1.0 / n) < effect:
            return k - have
    return None
