"""Change points along a series (``pinbench.series.changepoints``, decision 257): injected
shifts are found within one run of where they were put, a single outlier anywhere finds none,
a slow drift over ten runs is found, the segments' means are the series' own, and bad
settings and values are refused by name. Seeded, lognormal noise like real latencies."""

from __future__ import annotations

import pickle
import time

import numpy as np
import numpy.typing as npt
import pytest

from pinbench.series.changepoints import (
    MAX_SHUFFLES,
    ChangePoint,
    ChangePointsTimedOut,
    InvalidChangePointSettings,
    change_points,
)
from pinbench.series.errors import InvalidSeries


def _series(seed: int, n: int = 30, sigma: float = 0.02) -> npt.NDArray[np.float64]:
    return 1e6 * np.random.default_rng(seed).lognormal(0.0, sigma, n)


@pytest.mark.parametrize(
    ("seed", "at", "shift", "sigma"),
    [
        (1, 9, 0.10, 0.02),  # +10% at 5 sigma of run-to-run noise
        (2, 21, -0.10, 0.02),  # a speed-up is a change too
        (3, 15, 0.05, 0.01),  # +5% on quiet runs
    ],
)
def test_an_injected_shift_is_found_within_one_run(
    seed: int, at: int, shift: float, sigma: float
) -> None:
    x = _series(seed, sigma=sigma)
    x[at:] *= 1 + shift
    found = change_points(x)
    assert len(found) == 1 and abs(found[0].index - at) <= 1
    point = found[0]
    # The segments' means are the series' own, either side of the point.
    assert point.before == pytest.approx(float(np.mean(x[: point.index])))
    assert point.after == pytest.approx(float(np.mean(x[point.index :])))
    assert point.change == pytest.approx((point.after - point.before) / point.before)
    assert np.sign(point.change) == np.sign(shift)
    # Every one of at least 199 shuffles saved less than the real split: p = 1 / 200.
    assert point.p_value == pytest.approx(1 / 200)


def test_the_split_is_ruptures_own_kernel_change_point() -> None:
    import ruptures

    x = _series(4)
    x[12:] *= 1.1
    want = ruptures.KernelCPD(kernel="rbf", min_size=2).fit(x).predict(n_bkps=1)[0]
    assert [p.index for p in change_points(x)] == [want]


def test_two_shifts_are_both_found() -> None:
    x = _series(5, n=36)
    x[12:] *= 1.12
    x[24:] *= 0.85
    points = change_points(x)
    found = [p.index for p in points]
    assert len(found) == 2 and abs(found[0] - 12) <= 1 and abs(found[1] - 24) <= 1
    assert change_points(x) == points  # the shuffles are seeded: the same answer every time


@pytest.mark.parametrize("position", [0, 1, 14, 28, 29])
def test_a_single_outlier_finds_no_change_point(position: int) -> None:
    for seed in (6, 7):
        x = _series(seed)
        x[position] *= 3.0  # a run three times as slow: a hiccup, not a change
        assert change_points(x) == []


def test_a_slow_drift_over_ten_runs_is_found() -> None:
    for seed in (8, 9):
        x = _series(seed, sigma=0.01)
        x[10:20] *= np.linspace(1.01, 1.10, 10)  # +1% a run, e.g. ten framework upgrades
        x[20:] *= 1.10
        found = [p.index for p in change_points(x)]
        assert any(9 <= i <= 21 for i in found), found


def test_noise_alone_rarely_finds_anything() -> None:
    hits = sum(bool(change_points(_series(100 + seed))) for seed in range(20))
    assert hits <= 2  # 1% per test, a handful of tests per series


def test_short_or_constant_series_have_no_change_points() -> None:
    assert change_points([]) == []
    assert change_points([1.0, 2.0, 3.0]) == []  # shorter than two segments of min_size
    assert change_points([5.0] * 20) == []


def test_a_change_from_a_mean_of_zero_is_refused() -> None:
    with pytest.raises(InvalidSeries, match="mean before this change point is 0") as caught:
        change_points([0.0] * 10 + [1.0] * 10)
    assert caught.value.index == 10


@pytest.mark.parametrize(
    ("kwargs", "setting"),
    [
        ({"significance": 0.0}, "significance"),
        ({"significance": 0.7}, "significance"),
        ({"significance": True}, "significance"),
        ({"significance": 1e-12}, "significance"),  # 2e12 shuffles a split: refused (finding 1)
        ({"min_size": 1}, "min_size"),  # one run alone would make an outlier a change
        ({"min_size": 2.5}, "min_size"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs: dict[str, float], setting: str) -> None:
    with pytest.raises(InvalidChangePointSettings) as caught:
        change_points([1.0] * 10, **kwargs)  # type: ignore[arg-type]
    assert caught.value.setting == setting and setting in str(caught.value)
    assert pickle.loads(pickle.dumps(caught.value)).setting == setting


def test_values_that_are_not_finite_are_refused_with_their_position() -> None:
    with pytest.raises(InvalidSeries, match="position 3") as caught:
        change_points([1.0, 1.0, 1.0, float("inf"), 1.0])
    assert caught.value.index == 3


def test_change_point_is_a_frozen_value() -> None:
    point = ChangePoint(3, 1.0, 1.1, 0.1)
    with pytest.raises(AttributeError):
        point.index = 4  # type: ignore[misc]


def test_the_search_is_bounded_in_shuffles_and_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of issue 51, finding 1: the smallest significance takes 1,999 shuffles a split,
    never more than ``MAX_SHUFFLES``, and a deadline stops a search that runs past it."""
    import pinbench.series.changepoints as cp

    shifted = np.concatenate([_series(7, 10), 1.5 * _series(8, 10)])
    calls = 0
    real = cp._best_split

    def counted(segment: npt.NDArray[np.float64], min_size: int) -> tuple[int, float]:
        nonlocal calls
        calls += 1
        return real(segment, min_size)

    monkeypatch.setattr(cp, "_best_split", counted)
    (point,) = change_points(shifted, significance=0.001)
    assert point.index == 10 and point.p_value == pytest.approx(1 / 2000)
    assert calls <= 3 * (1 + 1999) < 3 * (1 + MAX_SHUFFLES)  # the split and its two sides
    with pytest.raises(ChangePointsTimedOut, match="ran past"):
        change_points(shifted, significance=0.001, deadline=time.monotonic())
