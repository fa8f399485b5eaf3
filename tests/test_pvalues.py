"""The gate's p-values in plain Python (``pinbench.series.pvalues``) are scipy's on the same
data: Student's and Welch's t (``ttest_ind``) and Mann-Whitney U (``mannwhitneyu``, exact and
asymptotic, with ties) on random samples the implementation did not choose, either direction,
far into the tails; and a raw-latency blob read without NumPy (``artifacts.npy_plain``) is
what ``np.load`` reads, or refused by name (its header is never evaluated)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pinbench.artifacts.npy_plain import numbers_of
from pinbench.series.pvalues import EXACT_MOST, mann_whitney, t_sf, t_test

CASES = 240


def _sample(rng: np.random.Generator, n: int, shift: float, ties: bool) -> list[float]:
    values = 1e6 * rng.lognormal(shift, 0.3, n)
    return [float(v) for v in (np.round(values / 1e5) if ties else values)]


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-300)


@pytest.mark.parametrize("welch", [True, False], ids=["welch", "student"])
def test_t_tests_are_scipys_ttest_ind(welch: bool) -> None:
    rng = np.random.default_rng(20261129)
    for case in range(CASES):
        n1 = int(rng.integers(2 if welch else 1, 40))
        n2 = int(rng.integers(2, 400))
        a = _sample(rng, n1, float(rng.normal(0.0, 0.2)), ties=case % 4 == 0)
        b = _sample(rng, n2, 0.0, ties=case % 4 == 0)
        for greater in (True, False):
            alternative = "greater" if greater else "less"
            want = float(stats.ttest_ind(a, b, equal_var=not welch, alternative=alternative).pvalue)
            got = t_test(a, b, welch=welch, greater=greater)
            assert _close(got, want), (case, n1, n2, greater, got, want)


def test_mann_whitney_is_scipys_exact_and_asymptotic() -> None:
    rng = np.random.default_rng(29112026)
    exact = 0
    for case in range(CASES):
        small = int(rng.integers(1, 12))
        n1, n2 = (
            (small, int(rng.integers(1, 300))) if case % 2 else (int(rng.integers(1, 300)), small)
        )
        ties = case % 3 == 0
        a = _sample(rng, n1, float(rng.normal(0.0, 0.3)), ties)
        b = _sample(rng, n2, 0.0, ties)
        exact += min(n1, n2) <= EXACT_MOST and len(set(a + b)) == n1 + n2
        for greater in (True, False):
            alternative = "greater" if greater else "less"
            want = float(stats.mannwhitneyu(a, b, alternative=alternative).pvalue)
            got = mann_whitney(a, b, greater=greater)
            assert _close(got, want), (case, n1, n2, greater, got, want)
    assert exact > CASES // 4  # both of scipy's methods were met


@pytest.mark.parametrize(
    ("t", "df"),
    [(50.0, 3.0), (8.0, 1000.5), (0.1, 2.0), (-3.0, 7.0), (20.0, 150_000.5), (37.0, 100.0),
     (1e-3, 5e5), (-40.0, 1.5), (3.0, 1.0)],
)  # fmt: skip
def test_students_survival_function_is_scipys_far_into_the_tails(t: float, df: float) -> None:
    assert math.isclose(t_sf(t, df), float(stats.t.sf(t, df)), rel_tol=1e-9)


def test_no_spread_is_an_infinite_t_and_a_side_of_one_value_has_no_welch() -> None:
    assert t_test([2.0, 2.0], [1.0, 1.0], welch=True, greater=True) == 0.0
    assert t_test([2.0, 2.0], [1.0, 1.0], welch=True, greater=False) == 1.0
    assert math.isnan(t_test([2.0], [1.0, 1.5], welch=True, greater=True))


@pytest.mark.parametrize("dtype", ["<i8", ">i8", "<f8", ">f4", "<u4", "<i4"])
def test_a_blob_is_read_as_numpy_reads_it(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(7)
    values = (rng.integers(0, 2**20, 1000)).astype(dtype)
    path = tmp_path / "x.npy"
    np.save(path, values, allow_pickle=False)
    assert numbers_of(path) == np.load(path).astype(np.float64).tolist()


def _npy(values: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, values, allow_pickle=False)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b"not a numpy file at all", "no NUMPY magic"),
        (_npy(np.zeros((2, 3))), "not a 1-D array of numbers"),
        (_npy(np.zeros(3, dtype=np.complex128)), "'<c16' is not an integer or float"),
        (_npy(np.zeros(3, dtype=np.int16)), "4 or 8 bytes"),
        (_npy(np.zeros(4))[:-8], "not 4 x 8"),
        (_npy(np.zeros(4)) + b"\0", "not 4 x 8"),
        (_npy(np.zeros(4)).replace(b"'shape'", b"'shap__'"), "not a 1-D array of numbers"),
        (_npy(np.zeros(4)).replace(b"{'descr'", b"[__import"), "not a 1-D array of numbers"),
        (_npy(np.zeros(4, dtype=[("a", "<f8")])), "not a 1-D array of numbers"),
        (b"\x93NUMPY\x09\x00" + b"\0" * 8, "version 9"),
    ],
    ids=["magic", "2d", "complex", "int16", "short", "long", "keys", "code", "record", "version"],
)
def test_a_blob_that_is_not_a_1d_array_of_numbers_is_refused_by_name(
    tmp_path: Path, data: bytes, named: str
) -> None:
    path = tmp_path / "x.npy"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=named):
        numbers_of(path)
