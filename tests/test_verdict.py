"""The rerun verdict's statistics: Mann-Whitney U against known values, and the decision rule."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pinbench.evaluator.verdict import accuracy_verdict, compare_latencies, mann_whitney


def test_mann_whitney_matches_a_textbook_value() -> None:
    # Fully separated samples of 3 and 4: U = 0 for the lower sample.
    u, p = mann_whitney(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0, 7.0]))
    assert u == 0.0
    assert p < 0.1
    u2, _ = mann_whitney(np.array([4.0, 5.0, 6.0, 7.0]), np.array([1.0, 2.0, 3.0]))
    assert u2 == 12.0  # U1 + U2 = n1 * n2


def test_identical_distributions_are_reproduced() -> None:
    rng = np.random.default_rng(0)
    a = rng.lognormal(10, 0.2, 5000)
    b = rng.lognormal(10, 0.2, 5000)
    result = compare_latencies(a, b)
    assert result.reproduced
    assert "within noise" in result.describe()


def test_a_clear_slowdown_is_named() -> None:
    rng = np.random.default_rng(1)
    a = rng.lognormal(10, 0.1, 5000)
    result = compare_latencies(a, a * 1.3)
    assert not result.reproduced
    assert result.describe().startswith("slower by 30.0%")


def test_a_significant_but_tiny_shift_is_noise() -> None:
    rng = np.random.default_rng(2)
    a = rng.lognormal(10, 0.05, 50_000)
    result = compare_latencies(a, a * 1.01)
    assert result.p_value < 0.01 and result.reproduced


@pytest.mark.parametrize(
    ("original", "rerun", "expected"),
    [
        ({"top1": 0.9}, {"top1": 0.9}, "accuracy identical"),
        ({"top1": 0.9}, {"top1": 0.8}, "accuracy differs"),
        ({}, {"top1": 0.8}, None),
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
