"""Judge a candidate — one run, or several runs of one lockfile — against a window of a
series' past runs under one threshold.

A threshold names a metric, which way is better, and a test:

* ``relative``: the candidate may be worse than the window's median by at most ``max_change``;
* ``t`` / ``mann-whitney``: a one-sided test in the worse direction at ``alpha`` (Student's
  t on per-run values, Welch's t on per-query latencies; Mann-Whitney U: scipy's p-values,
  ``series.pvalues``), and
  ``max_change``, when given, as the least change that counts;
* ``exact``: the candidate may not be worse than the window's median at all (accuracy on a
  fixed dataset);
* ``tolerance``: it may be worse by at most ``tolerance``, in the metric's own unit.

The candidate's figure is the median of its runs' figures (one run: its figure); the change
and every bound are judged on it.

Which numbers a test sees (decision 255). When the metric is a location of the per-query
latencies (``POOLED_METRICS``: their median or mean) and every candidate run and every run of
the window kept their per-query latencies (``Observation.raw``), the test compares the
candidate runs' latencies, pooled, with the window's pooled ones; otherwise the runs' summary
figures (one value a run). A tail percentile (p90, p99) is never judged by a pooled test: a
location test on all the latencies asks whether the typical query is slower, not whether the
tail is (a p99 2.7 times the window's, its median unchanged, came out inconclusive there);
each run's own figure answers it. Per-query latencies are not independent of their run (the
rerun verdict's docstring, ``evaluator.verdicts.verdict``): a pooled test sees every run-to-run
difference as significant. So a pooled test's significance is necessary, not sufficient: the
run-level test must agree at ``alpha`` too (``run_p_value``: the K candidate runs' figures
against the window's n figures, by the threshold's own test — Student's t, with K = 1 the
prediction test for one more run; Mann-Whitney U where it can reach alpha with K against n,
``significance.run_test``, else Student's t). On per-run values that test is the test itself;
Mann-Whitney there, when K against n cannot reach alpha, is inconclusive and says how many
candidate or past runs it needs (decision 264).

Verdicts: ``regressed`` only when the test says so and the change is worse than
``max_change`` (when given); ``inconclusive`` when the window holds fewer than ``min_runs``
runs, or when the candidate is worse by at least the change that counts (``max_change``, or
the rerun verdict's ``MIN_EFFECT``) and the test cannot show it (too noisy):
``reruns_needed`` then says how many more runs of the candidate would settle it (decision
256); ``passed`` otherwise. An undefined number (a change relative to zero, a p-value of
identical samples) is None, never 0.0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from pinbench import bounds
from pinbench.run_figures import p_said
from pinbench.series.errors import InvalidCandidates, InvalidSeries, InvalidThreshold
from pinbench.series.observation import Observation as Observation
from pinbench.series.significance import (
    MAX_RERUNS,
    figures,
    least_rank_p,
    median,
    p_value,
    ranks_reach,
    reruns_needed,
    run_test,
    samples,
    test_name,
)
from pinbench.series.threshold import Direction as Direction
from pinbench.series.threshold import TestName as TestName
from pinbench.series.threshold import Threshold as Threshold

Verdict = Literal["passed", "regressed", "inconclusive"]
STATISTICAL: frozenset[str] = frozenset({"t", "mann-whitney"})
POOLED_METRICS = frozenset({"framework_latency_p50_ns", "framework_latency_mean_ns"})
"""Metrics a location test on pooled per-query latencies judges (the rest: one figure a run)."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """The outcome of ``compare``: the verdict, its numbers, and one sentence saying why."""

    metric: str
    test: TestName
    verdict: Verdict
    baseline: float | None
    """The window's median of the metric (None: no past runs)."""
    candidate: float
    """The candidate's figure: the median of its runs' figures (one run: its figure)."""
    change: float | None
    """Relative change from the baseline, signed so that > 0 is worse (None: baseline 0)."""
    p_value: float | None
    alpha: float | None
    runs_used: int
    reruns_needed: int | None
    """Inconclusive only: runs of the candidate that would settle it, or, when the window is
    short of ``min_runs``, the past runs it lacks; None when reruns cannot settle it."""
    reason: str
    run_p_value: float | None = None
    """With per-query latencies: the run-level test's p-value (the candidate runs' figures
    against the window's: Student's t, or Mann-Whitney U where the threshold's test is it and
    can reach alpha), which must be under alpha too; None otherwise."""
    candidates: tuple[float, ...] = ()
    """Each candidate run's figure, in the order given."""


def validate(threshold: Threshold) -> None:
    """Refuse a threshold whose fields are out of bounds or do not fit its test."""
    t = threshold

    def bad(field: str, value: object, reason: str) -> InvalidThreshold:
        return InvalidThreshold(metric=t.metric, field=field, value=repr(value), reason=reason)

    if not isinstance(t.metric, str) or not t.metric.strip():
        raise bad("metric", t.metric, "must name a metric")
    if t.test not in get_args(TestName):
        raise bad("test", t.test, f"must be one of {', '.join(get_args(TestName))}")
    if t.direction not in get_args(Direction):
        raise bad("direction", t.direction, "must be 'lower' or 'higher' (which way is better)")
    for field, bound, value, integer in (
        ("alpha", bounds.SIGNIFICANCE, t.alpha, False),
        ("window", bounds.WINDOW_RUNS, t.window, True),
        ("min_runs", bounds.MIN_RUNS, t.min_runs, True),
        ("max_change", bounds.MAX_CHANGE, t.max_change, False),
        ("tolerance", bounds.TOLERANCE, t.tolerance, False),
    ):
        if value is None and field in {"max_change", "tolerance"}:
            continue  # optional: whether the test needs it is checked below
        if value is None or not (_integer(value) if integer else _number(value)):
            raise bad(field, value, f"must be {'an integer' if integer else 'a finite number'}")
        if not bound.holds(value):
            raise bad(field, value, f"must be {bound.text()}")
    if t.min_runs > t.window:
        raise bad("min_runs", t.min_runs, f"must be at most window ({t.window})")
    if t.test == "relative" and t.max_change is None:
        raise bad("max_change", None, "the relative test needs a bound (e.g. 0.05)")
    if t.test == "tolerance" and t.tolerance is None:
        raise bad("tolerance", None, "the tolerance test needs an absolute bound")
    if t.test != "tolerance" and t.tolerance is not None:
        raise bad("tolerance", t.tolerance, f"only the tolerance test uses it, not {t.test!r}")
    if t.test in {"exact", "tolerance"} and t.max_change is not None:
        raise bad("max_change", t.max_change, f"the {t.test} test does not use it")


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _integer(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def compare(
    threshold: Threshold,
    history: Sequence[Observation],
    candidate: Observation | Sequence[Observation],
) -> Comparison:
    """Judge ``candidate`` (one run, or several runs of the same lockfile: at most
    ``bounds.GATE_CANDIDATES``) against the last ``threshold.window`` runs of ``history``
    (oldest first)."""
    validate(threshold)
    candidates = [candidate] if isinstance(candidate, Observation) else list(candidate)
    if not bounds.GATE_CANDIDATES.holds(len(candidates)):
        raise InvalidCandidates(count=len(candidates))
    _check_finite(history, candidates)
    t = threshold
    window = list(history)[-t.window :]
    n = len(window)
    values = figures(window)
    baseline = median(values) if n else None
    value = median(figures(candidates))
    change = _change(baseline, value, t.direction)
    alpha = t.alpha if t.test in STATISTICAL else None

    result = _Outcome(t, baseline, value, change, alpha, n, tuple(o.value for o in candidates))

    size = _size(change, baseline)
    if n < t.min_runs:
        return result(
            "inconclusive",
            f"{t.metric}: only {n} past run{'s' if n != 1 else ''}, the {t.test} test "
            f"needs {t.min_runs}; {size} (no p-value)",
            more=t.min_runs - n,
        )
    if t.test != "exact" and t.test != "tolerance" and change is None:
        return result(
            "inconclusive",
            f"{t.metric}: the window's median is 0, so no relative change is defined "
            f"(the {t.test} test; no p-value)",
        )
    if t.test == "relative":
        assert change is not None and t.max_change is not None
        worse = change > t.max_change
        return result(
            "regressed" if worse else "passed",
            f"{t.metric}: {size}, {'over' if worse else 'within'} the relative bound "
            f"{t.max_change:.1%} (relative test; no p-value)",
        )
    if t.test in {"exact", "tolerance"}:
        assert baseline is not None
        worse_by = _worse_by(baseline, value, t.direction)
        allowed = 0.0 if t.test == "exact" else float(t.tolerance or 0.0)
        bound = "equality" if t.test == "exact" else f"the tolerance {allowed:.6g}"
        verdict: Verdict = "regressed" if worse_by > allowed else "passed"
        how = f"worse by {worse_by:.6g} than" if worse_by > 0 else _better_or_equal(worse_by)
        return result(
            verdict,
            f"{t.metric}: {_figure(candidates, value)}, {how} the window's median "
            f"{baseline:.6g}, {'beyond' if verdict == 'regressed' else 'within'} {bound} "
            f"({t.test} test; no p-value)",
        )
    assert change is not None
    return _statistical(t, window, candidates, change, result)


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What every verdict of one comparison shares; called with what differs."""

    t: Threshold
    baseline: float | None
    candidate: float
    change: float | None
    alpha: float | None
    runs: int
    candidates: tuple[float, ...]

    def __call__(
        self,
        verdict: Verdict,
        reason: str,
        p: float | None = None,
        more: int | None = None,
        p_run: float | None = None,
    ) -> Comparison:
        t = self.t
        return Comparison(
            t.metric,
            t.test,
            verdict,
            self.baseline,
            self.candidate,
            self.change,
            p,
            self.alpha,
            self.runs,
            more,
            reason,
            p_run,
            self.candidates,
        )


def _statistical(
    t: Threshold,
    window: Sequence[Observation],
    candidates: Sequence[Observation],
    change: float,
    result: _Outcome,
) -> Comparison:
    """``t`` and ``mann-whitney``: the test, the practical floor, the run-level guard."""
    from pinbench.evaluator.verdicts.verdict import MIN_EFFECT

    a, b, pooled = samples(window, candidates, pool=t.metric in POOLED_METRICS)
    k, n = len(candidates), len(window)
    size = _size(change, result.baseline)
    on_runs = run_test(t.test, k, n, t.alpha)
    if on_runs is None and not pooled:
        return result("inconclusive", _ranks_cannot(t, k, n, size))
    p = p_value(t.test, a, b, t.direction, pooled)
    name = test_name(t.test, pooled)
    runs = f"{k} run{'s' if k != 1 else ''}"
    if not pooled:
        on = f"{runs} vs {n} runs"
    elif k == 1:
        on = f"{len(a):,} per-query latencies vs {len(b):,} pooled from {n} runs"
    else:
        on = f"{len(a):,} per-query latencies pooled from {runs} vs {len(b):,} from {n} runs"
    stats = f"{name} on {on}, {p_said(p)}, alpha {t.alpha:g}"
    floor = t.max_change
    significant = p is not None and p < t.alpha
    big = change > (floor if floor is not None else 0.0)
    values = [o.value for o in window]
    p_run = None
    if pooled:
        # The run-level test: the threshold's own on the runs' figures, Student's t where
        # Mann-Whitney cannot reach alpha with so few runs (decision 255).
        level = on_runs or "t"
        p_run = p_value(level, figures(candidates), figures(window), t.direction, False)
        stats += f"; {test_name(level, False)} on the runs' figures ({runs} vs {n}), "
        stats += p_said(p_run)
    runs_agree = not pooled or (p_run is not None and p_run < t.alpha)
    floor_text = f", over the {floor:.1%} bound" if floor is not None and big else ""
    if significant and big and runs_agree:
        return result("regressed", f"{t.metric}: {size}{floor_text} ({stats})", p, None, p_run)
    counts = floor if floor is not None else MIN_EFFECT
    if change >= counts:
        more = reruns_needed(values, change, have=k)
        settle = (
            f"about {more} more run{'s' if more != 1 else ''} of the candidate would settle it"
            if more is not None
            else f"reruns of the candidate alone cannot settle it (over {MAX_RERUNS})"
        )
        return result(
            "inconclusive",
            f"{t.metric}: {size} but the test cannot show it ({stats}); {settle}",
            p,
            more,
            p_run,
        )
    return result("passed", f"{t.metric}: {size} ({stats})", p, None, p_run)


def _ranks_cannot(t: Threshold, k: int, n: int, size: str) -> str:
    """Why Mann-Whitney on ``k`` candidate runs' figures against ``n`` cannot regress, and
    what would let it."""
    runs, past = ranks_reach(k, n, t.alpha, most=int(bounds.GATE_CANDIDATES.high))
    need = ["per-query latencies on both sides"] if t.metric in POOLED_METRICS else []
    if past is not None:
        need.append(f">= {past} past runs")
    if runs is not None:
        need.append(f"{runs} candidate runs (gate --repeat {runs})")
    one = "one run's figure" if k == 1 else f"{k} runs' figures"
    return (
        f"{t.metric}: {size}; Mann-Whitney on {one} vs {n} runs cannot reach "
        f"p < {t.alpha:g} (its least p-value is {least_rank_p(k, n):.3g}): it needs "
        f"{' or '.join(need) or 'more runs'} (no p-value)"
    )


def _check_finite(history: Sequence[Observation], candidates: Sequence[Observation]) -> None:
    named = (
        ["the candidate"]
        if len(candidates) == 1
        else [f"candidate run {j}" for j in range(len(candidates))]
    )
    for i, o in enumerate([*history, *candidates]):
        where = f"past run {i}" if i < len(history) else named[i - len(history)]
        if not _number(o.value):
            raise InvalidSeries(index=i, reason=f"{where}'s value {o.value!r} is not finite")
        if o.raw is not None and not all(math.isfinite(v) for v in o.raw):
            raise InvalidSeries(index=i, reason=f"{where}'s raw latencies are not all finite")


def _change(baseline: float | None, value: float, direction: Direction) -> float | None:
    """Relative change from ``baseline``, > 0 when worse; None when it is undefined."""
    if baseline is None or baseline == 0.0:
        return None
    rel = (value - baseline) / abs(baseline)
    return rel if direction == "lower" else -rel


def _worse_by(baseline: float, value: float, direction: Direction) -> float:
    return value - baseline if direction == "lower" else baseline - value


def _figure(candidates: Sequence[Observation], value: float) -> str:
    """The candidate's figure as a reason states it: its runs' median when several."""
    if len(candidates) == 1:
        return f"{value:.6g}"
    return f"{value:.6g} (the median of {len(candidates)} runs)"


def _better_or_equal(worse_by: float) -> str:
    return "equal to" if worse_by == 0 else f"better by {-worse_by:.6g} than"


def _size(change: float | None, baseline: float | None) -> str:
    if change is None or baseline is None:
        return "change undefined (no past value to be relative to)"
    median = f"the window's median {baseline:.6g}"
    if change > 0:
        return f"{change:.2%} worse than {median}"
    return f"no worse than {median}" if change == 0 else f"{-change:.2%} better than {median}"
