"""The rerun verdict's statistics: Mann-Whitney U against known values, and the decision rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from pinbench.evaluator.verdicts.verdict import (
    accuracy_verdict,
    compare_latencies,
    mann_whitney,
    prediction_interval,
    t_995,
)


def test_mann_whitney_matches_a_textbook_value() -> None:
    # Fully separated samples of 3 and 4: U = 0 for the lower sample.
    u, p = mann_whitney(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0, 7.0]))
    assert u == 0.0
    assert p < 0.1
    u2, _ = mann_whitney(np.array([4.0, 5.0, 6.0, 7.0]), np.array([1.0, 2.0, 3.0]))
    assert u2 == 12.0  # U1 + U2 = n1 * n2


def _runs(rng: np.random.Generator, medians: list[float], n: int = 5000) -> list[Any]:
    """One array of per-query latencies per run, each around its own median."""
    return [rng.lognormal(np.log(m), 0.2, n) for m in medians]


# (case, original median, rerun medians, reproduced, description starts with)
CASES = [
    ("same machine state, one rerun", 100.0, [100.0], True, "latency reproduced within noise"),
    ("30% slower, one rerun", 100.0, [130.0], False, "slower by 30"),
    ("significant but under 5%", 100.0, [102.0], True, "latency reproduced within noise"),
    ("three tight reruns agree", 100.0, [99.0, 100.5, 101.0], True, "latency reproduced"),
    ("three tight reruns, original 30% slow", 130.0, [99.0, 100.5, 101.0], False, "faster by 2"),
    ("noisy reruns cover a 25% gap", 125.0, [80.0, 100.0, 130.0], True, "latency inconclusive"),
    ("noisy reruns, original far outside", 10_000.0, [80.0, 100.0, 130.0], False, "faster by 99"),
]


@pytest.mark.parametrize(("case", "original", "reruns", "reproduced", "start"), CASES)
def test_latency_verdict(
    case: str, original: float, reruns: list[float], reproduced: bool, start: str
) -> None:
    rng = np.random.default_rng(0)
    (first,) = _runs(rng, [original], 20_000)
    result = compare_latencies(first, _runs(rng, reruns, 20_000))
    assert result.reproduced is reproduced, case
    assert result.describe().startswith(start), result.describe()
    assert (result.interval is None) == (len(reruns) == 1)
    assert result.outcome == (
        "inconclusive"
        if start == "latency inconclusive"
        else "reproduced"
        if reproduced
        else "changed"
    )


def test_the_demos_wide_interval_is_inconclusive_not_reproduced() -> None:
    """What `make demo` once printed as "reproduced": reruns of a 12 µs model whose medians
    spread over a wide range; the original inside their 1-89 µs interval proves nothing."""
    rng = np.random.default_rng(3)
    (first,) = _runs(rng, [12_200.0], 20_000)
    result = compare_latencies(first, _runs(rng, [8_500.0, 12_000.0, 17_400.0], 20_000))
    assert result.outcome == "inconclusive"
    said = result.describe()
    assert "the 3 reruns' medians disagree with each other by 10" in said  # 17.4 / 8.5 - 1
    # what keeps it from "changed", in words: the original inside the reruns' interval
    assert result.interval is not None
    lo, hi = (f"{v / 1000:.1f} µs" for v in result.interval)
    assert f"median 12.2 µs lies inside the 3 reruns' 99% interval {lo} - {hi}" in said
    assert said.index("disagree") < said.index("inside") < said.index("--repeat")


@pytest.mark.parametrize("spread", [0.15, 0.3, 0.6])
def test_wide_noise_is_never_called_reproduced(spread: float) -> None:
    """Simulated reruns whose medians scatter by ``spread`` (log-normal): whatever the
    original, the verdict is inconclusive or a change, never "reproduced", whenever the
    reruns disagree by more than the band."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        medians = list(np.exp(rng.normal(np.log(100.0), spread, 3)))
        original = float(np.exp(rng.normal(np.log(100.0), spread)))
        (first,) = _runs(rng, [original], 2_000)
        result = compare_latencies(first, _runs(rng, medians, 2_000))
        if max(medians) / min(medians) - 1 > 0.10:
            assert result.outcome != "reproduced", result.describe()


def test_an_original_far_from_reruns_that_show_no_difference_is_inconclusive() -> None:
    """Reruns 9.5% apart (inside the band) give a wide interval with three runs; an original
    64% slower shows no significant difference against it, but cannot be "reproduced"."""
    rng = np.random.default_rng(2)
    (first,) = _runs(rng, [170.0], 20_000)
    result = compare_latencies(first, _runs(rng, [100.0, 104.0, 109.5], 20_000))
    assert result.outcome in ("inconclusive", "changed")
    single = compare_latencies(_runs(rng, [130.0], 20)[0], _runs(rng, [100.0], 20))
    assert single.outcome != "reproduced"  # one noisy rerun 30% away: no vouching for it


def test_tight_reruns_within_the_band_can_reproduce_and_the_band_is_configurable() -> None:
    rng = np.random.default_rng(5)
    (first,) = _runs(rng, [100.0], 20_000)
    tight = _runs(rng, [98.0, 100.0, 103.0], 20_000)
    assert compare_latencies(first, tight).outcome == "reproduced"
    assert compare_latencies(first, tight, band=0.02).outcome == "inconclusive"


@pytest.mark.parametrize("df", [1, 2, 3, 5, 10, 20, 30])
def test_t_quantiles_agree_with_scipy(df: int) -> None:
    assert t_995(df) == pytest.approx(stats.t.ppf(0.995, df), abs=1e-3)


@pytest.mark.parametrize("df", [11, 14, 16, 25, 29, 31, 100])
def test_untabulated_t_quantiles_are_conservative(df: int) -> None:
    assert t_995(df) >= stats.t.ppf(0.995, df)


def test_prediction_interval_covers_new_runs_99_percent_of_the_time() -> None:
    """The law behind the verdict: with runs of a fixed true spread, one more run's median
    falls inside the interval from three runs about 99% of the time."""
    rng = np.random.default_rng(7)
    trials, inside = 4000, 0
    for _ in range(trials):
        medians = np.exp(rng.normal(np.log(100.0), 0.1, 4))
        lo, hi = prediction_interval(list(medians[:3]))
        inside += lo <= medians[3] <= hi
    assert 0.98 <= inside / trials <= 1.0


@pytest.mark.parametrize(
    ("original", "rerun", "expected"),
    [
        ({"top1": 0.9}, {"top1": 0.9}, "accuracy identical"),
        ({"top1": 0.9}, {"top1": 0.8}, "accuracy differs"),
        ({}, {"top1": 0.8}, None),
        ({"spearman": 0.944}, {"spearman": 0.944}, "accuracy identical (Spearman 0.9440)"),
        ({"spearman": 0.944}, {"spearman": 0.9}, "Spearman 0.9440 then 0.9000"),
        ({"map": 0.65, "map50": 1.0}, {"map": 0.65, "map50": 0.5}, "mAP@.5 1.0000 then 0.5000"),
        ({"top1": 0.9, "top5": 1.0}, {"top1": 0.9}, "top-5 1.0000 then none"),
        # every output's copy of a per-output metric is checked (the old fixed list missed them)
        ({"top1_a": 0.9, "top1_b": 0.5}, {"top1_a": 0.9, "top1_b": 0.4}, "top-1 (b) 0.5000 then"),
        # a count of samples scored is not an accuracy a rerun must reproduce
        ({"top1": 0.9, "accuracy_samples_count": 10}, {"top1": 0.9}, "accuracy identical"),
    ],
)
def test_accuracy_verdict(
    original: dict[str, float], rerun: dict[str, float], expected: str | None
) -> None:
    verdict = accuracy_verdict(original, rerun)
    assert (verdict is None) if expected is None else (verdict is not None and expected in verdict)


@pytest.mark.parametrize("seed", range(5))
def test_mann_whitney_agrees_with_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 50, 300).astype(float)  # many ties
    b = rng.integers(5, 55, 200).astype(float)
    u, p = mann_whitney(a, b)
    ref = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    assert u == pytest.approx(ref.statistic)
    assert p == pytest.approx(ref.pvalue, rel=1e-6)


def test_the_least_effect_is_a_fold_either_way_and_can_be_raised() -> None:
    """A 2.5-fold slowdown and a 2.5-fold speed-up are both changes at the default 5 %; with
    ``min_effect`` 4 (five-fold), neither is, while a 100-fold speed-up still is (``bisect
    --min-effect`` on a busy machine, decision 266)."""
    rng = np.random.default_rng(7)
    (first,) = _runs(rng, [100.0], 5_000)

    def outcome(median: float, **kw: float) -> str:
        reruns = _runs(rng, [median * f for f in (0.99, 1.0, 1.01)], 5_000)
        return compare_latencies(first, reruns, **kw).outcome

    assert outcome(250.0) == outcome(40.0) == "changed"
    assert outcome(250.0, min_effect=4.0) != "changed"
    assert outcome(40.0, min_effect=4.0) != "changed"
    assert outcome(1.0, min_effect=4.0) == "changed"
    assert outcome(600.0, min_effect=4.0) == "changed"


P_SAID = [
    ("an ordinary p-value", 0.0123, "p = 0.0123"),
    ("one that underflowed to zero (issue 72: printed p = 0)", 0.0, "p < 1e-300"),
    ("one below the bound", 1e-320, "p < 1e-300"),
    ("the bound itself", 1e-300, "p = 1e-300"),
    ("a test that has none", None, "p undefined (identical samples)"),
]


@pytest.mark.parametrize(("case", "p", "said"), P_SAID, ids=[c for c, _, _ in P_SAID])
def test_a_p_value_is_printed_as_a_bound_where_it_underflows(
    case: str, p: float | None, said: str
) -> None:
    from pinbench.run_figures import p_said

    assert p_said(p) == said, case


def test_a_rerun_verdict_far_from_its_original_prints_the_bound_not_zero() -> None:
    rng = np.random.default_rng(0)
    (first,) = _runs(rng, [10_000.0], 20_000)
    result = compare_latencies(first, _runs(rng, [80.0, 100.0, 130.0], 20_000))
    assert result.p_value < 1e-300  # SciPy's Mann-Whitney underflows this far apart
    assert "Mann-Whitney p < 1e-300" in result.describe()
    assert "p = 0" not in result.describe()
