"""The gate's threshold tests (``pinbench.series.stats``): p-values are scipy's on the same
data, verdicts follow the documented rule, the false-alarm rate on simulated lognormal runs
holds at alpha, and every bad field of a threshold is refused by name (decisions 255-256)."""

from __future__ import annotations

import math
import pickle
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pinbench.evaluator.verdicts.verdict import NOISE_FLOOR, t_995
from pinbench.series.errors import InvalidCandidates, InvalidSeries, InvalidThreshold
from pinbench.series.stats import Observation, Threshold, compare, validate

P50 = Threshold("framework_latency_p50_ns", "t", "lower")


def _values(seed: int, n: int, sigma: float = 0.02, centre: float = 1e6) -> list[Observation]:
    rng = np.random.default_rng(seed)
    return [Observation(float(v)) for v in centre * rng.lognormal(0.0, sigma, n)]


def _run(rng: np.random.Generator, scale: float, sigma_run: float, n: int = 200) -> Observation:
    """A run as pinbench's latencies look: the run's own median moved by run-to-run noise,
    lognormal per-query latencies around it; the run's figure is its median."""
    median = 1e6 * scale * math.exp(rng.normal(0.0, sigma_run))
    raw = median * rng.lognormal(0.0, 0.2, n)
    return Observation(float(np.median(raw)), tuple(raw.tolist()))


# --- p-values are scipy's, on the same data -------------------------------------------------


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_t_on_per_run_values_is_students_t_one_sided(direction: str) -> None:
    history = _values(1, 10)
    candidate = Observation(1.04e6 if direction == "lower" else 0.96e6)
    got = compare(replace(P50, direction=direction), history, candidate)  # type: ignore[arg-type]
    want = scipy_stats.ttest_ind(
        [candidate.value],
        [o.value for o in history],
        equal_var=True,
        alternative="greater" if direction == "lower" else "less",
    ).pvalue
    assert got.p_value == pytest.approx(float(want), rel=1e-12)
    assert got.alpha == 0.01 and got.runs_used == 10
    assert "Student's t" in got.reason and f"{got.p_value:.3g}" in got.reason


def test_t_on_raw_latencies_is_welchs_t_on_the_pooled_window() -> None:
    rng = np.random.default_rng(2)
    history = [_run(rng, 1.0, 0.01) for _ in range(12)]
    candidate = _run(rng, 1.03, 0.01)
    got = compare(replace(P50, window=8), history, candidate)
    pooled = np.concatenate([np.asarray(o.raw) for o in history[-8:]])
    want = scipy_stats.ttest_ind(candidate.raw, pooled, equal_var=False, alternative="greater")
    assert got.p_value == pytest.approx(float(want.pvalue), rel=1e-9)
    assert got.runs_used == 8 and "Welch's t on 200 per-query latencies vs 1,600" in got.reason


def test_mann_whitney_on_raw_and_on_per_run_values_is_scipys() -> None:
    rng = np.random.default_rng(3)
    history = [_run(rng, 1.0, 0.01) for _ in range(5)]
    candidate = _run(rng, 1.1, 0.01)
    mw = Threshold("framework_latency_p50_ns", "mann-whitney", "lower")
    got = compare(mw, history, candidate)
    pooled = np.concatenate([np.asarray(o.raw) for o in history])
    want = scipy_stats.mannwhitneyu(candidate.raw, pooled, alternative="greater").pvalue
    assert got.p_value == pytest.approx(float(want), rel=1e-9)
    # Per-run figures (the throughput has no per-query values): one run vs 30.
    qps = Threshold("throughput_qps", "mann-whitney", "higher", alpha=0.05, window=30)
    history = _values(4, 30, centre=500.0)
    got = compare(qps, history, Observation(400.0))
    want = scipy_stats.mannwhitneyu([400.0], [o.value for o in history], alternative="less")
    assert got.p_value == pytest.approx(float(want.pvalue), rel=1e-12)
    assert got.verdict == "regressed" and float(want.pvalue) < 0.05  # the least of 31 ranks


# --- verdicts ---------------------------------------------------------------------------------

HISTORY = [Observation(v) for v in (100.0, 102.0, 98.0, 101.0, 99.0)]  # median 100


@pytest.mark.parametrize(
    ("threshold", "value", "verdict", "change"),
    [
        (Threshold("p90", "relative", "lower", max_change=0.05), 104.0, "passed", 0.04),
        (Threshold("p90", "relative", "lower", max_change=0.05), 106.0, "regressed", 0.06),
        # Throughput: lower is worse; the change is signed so that > 0 is worse.
        (Threshold("qps", "relative", "higher", max_change=0.05), 94.0, "regressed", 0.06),
        (Threshold("qps", "relative", "higher", max_change=0.05), 130.0, "passed", -0.30),
        (Threshold("top1", "exact", "higher"), 100.0, "passed", 0.0),
        (Threshold("top1", "exact", "higher"), 99.99, "regressed", 0.0001),
        (Threshold("top1", "exact", "higher"), 100.5, "passed", -0.005),  # better is no regression
        (Threshold("top1", "tolerance", "higher", tolerance=0.5), 99.6, "passed", 0.004),
        (Threshold("top1", "tolerance", "higher", tolerance=0.5), 99.4, "regressed", 0.006),
    ],
)
def test_bounds_without_a_p_value(
    threshold: Threshold, value: float, verdict: str, change: float
) -> None:
    got = compare(threshold, HISTORY, Observation(value))
    assert (got.verdict, got.baseline, got.p_value, got.alpha) == (verdict, 100.0, None, None)
    assert got.change == pytest.approx(change)
    assert got.reruns_needed is None
    assert threshold.metric in got.reason and threshold.test in got.reason
    assert "than the window's median 100" in got.reason or "equal to the window's" in got.reason


def test_too_few_runs_is_inconclusive_and_says_how_many_are_missing() -> None:
    got = compare(replace(P50, min_runs=5), _values(5, 3), Observation(2e6))
    assert got.verdict == "inconclusive" and got.reruns_needed == 2 and got.p_value is None
    assert "only 3 past runs" in got.reason and "needs 5" in got.reason
    got = compare(P50, [], Observation(2e6))
    assert (got.baseline, got.change, got.runs_used, got.reruns_needed) == (None, None, 0, 3)


def test_a_baseline_of_zero_leaves_the_change_undefined_not_zero() -> None:
    zeros = [Observation(0.0)] * 4
    got = compare(Threshold("errors", "relative", "lower", max_change=0.1), zeros, Observation(3))
    assert got.change is None and got.verdict == "inconclusive"
    # An absolute tolerance needs no relative change.
    got = compare(Threshold("errors", "tolerance", "lower", tolerance=1.0), zeros, Observation(3))
    assert got.verdict == "regressed" and got.change is None


def test_identical_samples_have_no_p_value() -> None:
    same = [Observation(5.0)] * 4
    got = compare(Threshold("x", "t", "lower"), same, Observation(5.0))
    assert got.p_value is None and got.verdict == "passed" and "undefined" in got.reason


def test_significant_but_under_max_change_passes() -> None:
    tight = [Observation(1e6 * (1 + 0.001 * i)) for i in range(-3, 4)]
    got = compare(replace(P50, max_change=0.05), tight, Observation(1.02e6))
    assert got.p_value is not None and got.p_value < 0.01
    assert got.verdict == "passed"  # 2% is significant here, but under the 5% that counts
    got = compare(replace(P50, max_change=0.01), tight, Observation(1.02e6))
    assert got.verdict == "regressed" and "over the 1.0% bound" in got.reason


def test_too_noisy_is_inconclusive_with_the_reruns_the_verdicts_interval_needs() -> None:
    noisy = _values(6, 8, sigma=0.05)
    median = float(np.median([o.value for o in noisy]))
    got = compare(replace(P50, max_change=0.05), noisy, Observation(1.12 * median))
    assert got.verdict == "inconclusive" and got.p_value is not None and got.p_value >= 0.01
    # The rerun verdict's interval: Student's t (99%) at the window's degrees of freedom on
    # the log spread, floored at NOISE_FLOOR; the fewest runs k whose mean it tells apart.
    logs = np.log([o.value for o in noisy])
    spread = max(float(np.std(logs, ddof=1)), math.log1p(NOISE_FLOOR))
    assert got.change is not None
    k = next(
        k
        for k in range(2, 200)
        if t_995(7) * spread * math.sqrt(1 / k + 1 / 8) < math.log1p(got.change)
    )
    assert got.reruns_needed == k - 1
    assert f"about {k - 1} more runs" in got.reason
    # Noisier still, no number of candidate runs would do: the window itself must grow.
    wild = _values(6, 6, sigma=0.2)
    median = float(np.median([o.value for o in wild]))
    got = compare(replace(P50, max_change=0.05), wild, Observation(1.12 * median))
    assert got.verdict == "inconclusive" and got.reruns_needed is None
    assert "cannot settle it" in got.reason


def test_pooled_raw_needs_the_run_level_test_to_agree() -> None:
    rng = np.random.default_rng(7)
    history = [_run(rng, 1.0, 0.05) for _ in range(10)]
    # 8% slower over 2,000 pooled latencies is hugely significant, but runs differ by ~5%.
    figures = [o.value for o in history]
    candidate = _run(rng, 1.0, 0.0, n=2000)
    factor = 1.08 * float(np.median(figures)) / candidate.value
    candidate = Observation(candidate.value * factor, tuple(np.asarray(candidate.raw) * factor))
    got = compare(replace(P50, max_change=0.05), history, candidate)
    run_p = scipy_stats.ttest_ind([candidate.value], figures, alternative="greater").pvalue
    assert got.p_value is not None and got.p_value < 1e-6
    assert got.run_p_value == pytest.approx(float(run_p), rel=1e-12) and run_p >= 0.01
    assert got.verdict == "inconclusive" and "Student's t on the runs' figures" in got.reason
    # Per-run values have no second test: the t test is the run-level one.
    assert compare(P50, history[:5], Observation(1e6)).run_p_value is None


def test_mann_whitney_on_too_few_runs_cannot_reach_alpha() -> None:
    got = compare(Threshold("qps", "mann-whitney", "higher"), _values(8, 10), Observation(1.0))
    assert got.verdict == "inconclusive" and got.p_value is None
    assert "cannot reach p < 0.01" in got.reason and ">= 100 past runs" in got.reason


# --- the false-alarm rate and the power, simulated -------------------------------------------


def _margin(alpha: float, trials: int) -> float:
    """Three binomial standard errors."""
    return 3.0 * math.sqrt(alpha * (1.0 - alpha) / trials)


def test_false_alarm_rate_on_per_run_values_is_at_most_alpha() -> None:
    rng = np.random.default_rng(11)
    trials, alpha = 400, 0.05
    logs = rng.normal(0.0, 0.03, (trials, 11))
    alarms = 0
    for row in 1e6 * np.exp(logs):
        history = [Observation(float(v)) for v in row[:10]]
        got = compare(replace(P50, alpha=alpha), history, Observation(float(row[10])))
        alarms += got.verdict == "regressed"
    assert alarms / trials <= alpha + _margin(alpha, trials)


def test_false_alarm_rate_on_raw_latencies_and_why_pooling_alone_is_not_enough() -> None:
    rng = np.random.default_rng(12)
    trials, alpha = 200, 0.05
    alarms = pooled_significant = 0
    for _ in range(trials):
        runs = [_run(rng, 1.0, 0.02, n=400) for _ in range(11)]
        got = compare(replace(P50, alpha=alpha), runs[:10], runs[10])
        alarms += got.verdict == "regressed"
        pooled_significant += got.p_value is not None and got.p_value < alpha
    assert alarms / trials <= alpha + _margin(alpha, trials)
    # The pooled test alone treats run-to-run noise as a difference (decision 255).
    assert pooled_significant / trials > 3 * alpha


def test_a_five_percent_shift_is_detected_on_quiet_runs() -> None:
    rng = np.random.default_rng(13)
    trials, detected = 150, 0
    for _ in range(trials):
        history = [_run(rng, 1.0, 0.01, n=1000) for _ in range(10)]
        got = compare(P50, history, _run(rng, 1.05, 0.01, n=1000))
        detected += got.verdict == "regressed"
    assert detected / trials >= 0.5  # bench/bench_gate_simulation.py reports the figures


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"metric": " "}, "metric"),
        ({"test": "z-score"}, "test"),
        ({"direction": "up"}, "direction"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 0.6}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": None}, "alpha"),
        ({"window": 1}, "window"),
        ({"window": 1001}, "window"),
        ({"window": 10.0}, "window"),
        ({"window": True}, "window"),
        ({"min_runs": 1}, "min_runs"),
        ({"min_runs": 11}, "min_runs"),  # more than the window
        ({"max_change": 0.0}, "max_change"),
        ({"max_change": 11.0}, "max_change"),
        ({"max_change": float("inf")}, "max_change"),
        ({"test": "relative"}, "max_change"),  # a relative test without its bound
        ({"test": "tolerance"}, "tolerance"),  # a tolerance test without its tolerance
        ({"test": "tolerance", "tolerance": -1.0}, "tolerance"),
        ({"test": "tolerance", "tolerance": float("nan")}, "tolerance"),
        ({"test": "tolerance", "tolerance": 1e19}, "tolerance"),
        ({"tolerance": 0.5}, "tolerance"),  # given to a test that would ignore it
        ({"test": "exact", "max_change": 0.05}, "max_change"),  # ignored by exact
        ({"test": "tolerance", "tolerance": 1.0, "max_change": 0.05}, "max_change"),
    ],
)
def test_each_bad_field_is_refused_by_name(fields: dict[str, Any], field: str) -> None:
    threshold = replace(P50, **fields)
    with pytest.raises(InvalidThreshold) as caught:
        validate(threshold)
    assert caught.value.field == field and field in str(caught.value)
    back = pickle.loads(pickle.dumps(caught.value))
    assert (back.metric, back.field, back.reason) == (
        caught.value.metric,
        field,
        caught.value.reason,
    )
    with pytest.raises(InvalidThreshold):
        compare(threshold, HISTORY, Observation(1.0))


def test_values_that_are_not_finite_are_refused_with_their_position() -> None:
    with pytest.raises(InvalidSeries, match="past run 1's value nan"):
        compare(P50, [Observation(1.0), Observation(float("nan"))], Observation(1.0))
    with pytest.raises(InvalidSeries, match="the candidate's raw latencies"):
        compare(P50, HISTORY, Observation(1.0, (1.0, float("inf"))))


def test_a_pooled_side_is_capped_evenly_and_deterministically() -> None:
    """Review of issue 51, finding 3: a pooled test takes at most ``MAX_POOLED`` latencies a
    side, every k-th in order, so its memory and time are bounded whatever the window holds;
    the p-value is scipy's on exactly those."""
    from pinbench.series.significance import MAX_POOLED, samples, strided

    rng = np.random.default_rng(3)
    window = [Observation(1e6, (1e6 * rng.lognormal(0.0, 0.2, 60_000)).tolist()) for _ in range(3)]
    cand = Observation(1.1e6, (1.1e6 * rng.lognormal(0.0, 0.2, 150_000)).tolist())
    a, b, pooled = samples(window, [cand])
    assert pooled and len(a) == len(b) == MAX_POOLED == 100_000
    whole = np.concatenate([np.asarray(o.raw) for o in window])
    assert np.array_equal(b, whole[np.arange(MAX_POOLED) * len(whole) // MAX_POOLED])
    assert cand.raw is not None and np.array_equal(a, strided(list(cand.raw)))
    assert len(strided([float(v) for v in range(10)])) == 10  # under the cap: all of it
    t = replace(P50, metric="framework_latency_p50_ns")
    got = compare(t, window, cand)
    want = scipy_stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    assert got.p_value == pytest.approx(want, rel=1e-9)


def test_a_tail_percentile_is_judged_on_the_runs_figures_not_a_pooled_location_test() -> None:
    """Review of issue 51, finding 4: a p99 172 % worse than the window's, median unchanged,
    regresses: a pooled location test (Mann-Whitney, here p = 0.27) is not asked about a
    tail; each run's own p99 is, with scipy's p-value on those figures. p50 still pools."""
    rng = np.random.default_rng(0)

    def run(tail: bool = False) -> tuple[Observation, Observation]:
        x = 1e5 * np.exp(rng.normal(0.0, 0.03, 5000))
        if tail:
            x[rng.choice(5000, 60, replace=False)] *= 3
        raw = tuple(x.tolist())
        return Observation(float(np.percentile(x, 99)), raw), Observation(float(np.median(x)), raw)

    runs = [run() for _ in range(10)]
    cand = run(tail=True)
    p99 = Threshold("framework_latency_p99_ns", "t", "lower", max_change=0.10)
    got = compare(p99, [r[0] for r in runs], cand[0])
    figures = [r[0].value for r in runs]
    want = scipy_stats.ttest_ind([cand[0].value], figures, alternative="greater").pvalue
    assert got.verdict == "regressed" and got.run_p_value is None
    assert got.p_value == pytest.approx(float(want), rel=1e-9)
    assert "Student's t on 1 run vs 10 runs" in got.reason
    mw = compare(replace(p99, test="mann-whitney", window=200, min_runs=2), [r[0] for r in runs],
                 cand[0])  # fmt: skip
    assert mw.verdict == "inconclusive" and "needs >= 100 past runs" in mw.reason
    p50 = compare(replace(p99, metric="framework_latency_p50_ns"), [r[1] for r in runs], cand[1])
    assert "per-query latencies vs 50,000 pooled" in p50.reason


# --- several candidate runs (gate --repeat K; decision 264) ----------------------------------


def test_k_candidate_runs_pooled_p_values_are_scipys_on_their_latencies_and_figures() -> None:
    """Three runs of one candidate: the pooled test is Welch's t on their latencies together
    against the window's; the run-level test is Student's t of the three figures against the
    window's (n + k - 2 degrees of freedom); the candidate's figure is their median."""
    rng = np.random.default_rng(21)
    history = [_run(rng, 1.0, 0.02) for _ in range(10)]
    cands = [_run(rng, 1.06, 0.02) for _ in range(3)]
    got = compare(P50, history, cands)
    mine = np.concatenate([np.asarray(c.raw) for c in cands])
    pooled = np.concatenate([np.asarray(o.raw) for o in history])
    want = scipy_stats.ttest_ind(mine, pooled, equal_var=False, alternative="greater")
    figures = [o.value for o in history]
    ran = [c.value for c in cands]
    run_p = scipy_stats.ttest_ind(ran, figures, equal_var=True, alternative="greater").pvalue
    assert got.p_value == pytest.approx(float(want.pvalue), rel=1e-9)
    assert got.run_p_value == pytest.approx(float(run_p), rel=1e-12)
    assert got.candidate == float(np.median(ran)) and got.candidates == tuple(ran)
    assert got.change == pytest.approx(float(np.median(ran)) / float(np.median(figures)) - 1)
    assert "per-query latencies pooled from 3 runs vs 2,000 from 10 runs" in got.reason
    assert "Student's t on the runs' figures (3 runs vs 10)" in got.reason
    assert got.verdict == ("regressed" if max(got.p_value, run_p) < 0.01 else "inconclusive")
    # A direct reference for Student's t: the pooled-variance statistic on its t distribution.
    k, n = len(ran), len(figures)
    sp = ((k - 1) * np.var(ran, ddof=1) + (n - 1) * np.var(figures, ddof=1)) / (k + n - 2)
    t = (np.mean(ran) - np.mean(figures)) / math.sqrt(sp * (1 / k + 1 / n))
    assert got.run_p_value == pytest.approx(float(scipy_stats.t.sf(t, k + n - 2)), rel=1e-9)


def test_k_runs_let_mann_whitney_on_figures_reach_alpha_where_one_cannot() -> None:
    """Mann-Whitney on runs' figures: one run against 10 can reach p = 1/11 at best, so it
    says what it needs (``gate --repeat 3``); three runs against 10 reach 1/286, and the
    p-value is scipy's. With latencies, the run-level test is then Mann-Whitney too."""
    qps = Threshold("throughput_sps", "mann-whitney", "higher")
    history = _values(22, 10, centre=500.0)
    one = compare(qps, history, Observation(400.0))
    assert one.verdict == "inconclusive" and one.p_value is None
    assert "least p-value is 0.0909" in one.reason and "gate --repeat 3" in one.reason
    ran = [400.0, 410.0, 395.0]
    got = compare(qps, history, [Observation(v) for v in ran])
    want = scipy_stats.mannwhitneyu(ran, [o.value for o in history], alternative="less")
    assert got.p_value == pytest.approx(float(want.pvalue), rel=1e-12)
    assert float(want.pvalue) == pytest.approx(1 / math.comb(13, 3))  # every rank below
    assert got.verdict == "regressed" and "Mann-Whitney U on 3 runs vs 10 runs" in got.reason
    rng = np.random.default_rng(23)
    raw_history = [_run(rng, 1.0, 0.01) for _ in range(10)]
    cands = [_run(rng, 1.08, 0.01) for _ in range(3)]
    mw = Threshold("framework_latency_p50_ns", "mann-whitney", "lower")
    got = compare(mw, raw_history, cands)
    figures = [o.value for o in raw_history]
    want = scipy_stats.mannwhitneyu([c.value for c in cands], figures, alternative="greater")
    assert got.run_p_value == pytest.approx(float(want.pvalue), rel=1e-12)
    assert "Mann-Whitney U on the runs' figures (3 runs vs 10)" in got.reason
    # One run: Mann-Whitney cannot reach alpha on the runs, so Student's t stays the guard.
    assert (
        "Student's t on the runs' figures (1 run vs 10)"
        in compare(mw, raw_history, cands[0]).reason
    )


def test_k_runs_settle_what_one_cannot_and_the_count_of_candidate_runs_is_bounded() -> None:
    from pinbench.series.significance import reruns_needed

    noisy = _values(6, 8, sigma=0.05)
    figures = [o.value for o in noisy]
    median = float(np.median(figures))
    one = compare(replace(P50, max_change=0.05), noisy, Observation(1.12 * median))
    assert one.verdict == "inconclusive" and one.reruns_needed is not None
    assert one.change is not None
    # ``have`` runs judged already count toward what the interval needs.
    assert reruns_needed(figures, one.change, have=3) == one.reruns_needed - 2
    ran = [Observation(1.12 * median * f) for f in (0.99, 1.0, 1.01)]
    three = compare(replace(P50, max_change=0.05), noisy, ran)
    want = scipy_stats.ttest_ind([o.value for o in ran], figures, alternative="greater")
    assert three.p_value == pytest.approx(float(want.pvalue), rel=1e-12)
    assert float(want.pvalue) < 0.01
    assert three.verdict == "regressed"
    for count in (0, 21):
        with pytest.raises(InvalidCandidates, match=f"between 1 and 20, got {count}"):
            compare(P50, HISTORY, [Observation(1.0)] * count)
    with pytest.raises(InvalidSeries, match="candidate run 1's value nan"):
        compare(P50, HISTORY, [Observation(1.0), Observation(float("nan"))])
