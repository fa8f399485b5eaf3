"""A SingleStream or MultiStream test is planned for a model faster than its warm-up said
(``scenarios.PLAN_MARGIN``): a warm-up slowed by other work planned too few queries, and the
test ended INVALID, "min_duration not met" (docs/authoring.md's walkthrough, 2026-11-30).
LoadGen stops issuing at ``min_duration_ms`` and ``min_query_count``, so the margin costs no
query; a fast model, which plans many already, is planned as measured."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.registry.request import Scenario
from pinbench.worker.scenarios import PLAN_CHEAP, PLAN_MARGIN, run_scenario, settings_for

MODEL_S = 0.002
"""What the model below takes a query."""


def _verdict(log_dir: Path) -> str:
    summary = (log_dir / "mlperf_log_summary.txt").read_text()
    return next(line for line in summary.splitlines() if line.startswith("Result is"))


PLANS = [
    # (scenario, queries LoadGen would plan at the warm-up's 5 ms a call, their time)
    ({"name": "SingleStream", "min_duration_ms": 200, "min_query_count": 16}, 80, 0.160),
    (
        {"name": "MultiStream", "min_duration_ms": 400, "min_query_count": 64},
        80,  # of 2 calls each (samples_per_query 2)
        0.320,
    ),
]


@pytest.mark.parametrize(("settings", "unmargined", "their_time"), PLANS, ids=["SS", "MS"])
def test_a_warm_up_slower_than_the_test_leaves_it_enough_queries(
    settings: dict[str, Any], unmargined: int, their_time: float, tmp_path: Path
) -> None:
    """The warm-up said 5 ms a call where the model takes 2: planned at 5 ms, LoadGen would
    have made ``unmargined`` queries, done in ``their_time``, short of ``min_duration_ms``."""
    scenario = msgspec.convert({**settings, "samples_per_query": 2}, Scenario)
    assert their_time < scenario.min_duration_ms / 1000
    calls: list[float] = []

    def predict(batch: Any) -> dict[str, Any]:
        calls.append(time.perf_counter())
        time.sleep(MODEL_S)
        return {"y": np.asarray(batch, dtype=np.float32)}

    x = np.zeros((8, 4), dtype=np.float32)
    run_scenario(
        predict, x, scenario, batch_size=1, expected_latency_ns=5_000_000, log_dir=tmp_path
    )
    assert _verdict(tmp_path) == "Result is : VALID"
    per_query = 2 if scenario.name == "MultiStream" else 1
    # issued until the minimum was met, far fewer than the margin planned
    assert unmargined * per_query < len(calls) < PLAN_MARGIN * unmargined * per_query
    assert calls[-1] - calls[0] >= scenario.min_duration_ms / 1000 - 2 * MODEL_S * per_query


@pytest.mark.parametrize(
    ("expected_ns", "planned_ns"),
    [
        (5_000_000, 5_000_000 // PLAN_MARGIN),  # 400 queries as measured: the whole margin
        (2 * 10**9 // (PLAN_CHEAP // 2), 2 * 10**9 // (PLAN_CHEAP // 2) // 2),  # half of it
        (10_000, 10_000),  # 200,000 queries as measured: none
    ],
)
def test_the_margin_plans_at_most_plan_cheap_queries(expected_ns: int, planned_ns: int) -> None:
    scenario = msgspec.convert({"name": "SingleStream", "min_duration_ms": 1000}, Scenario)
    settings = settings_for(scenario, expected_latency_ns=expected_ns, batch_size=1)
    assert settings.single_stream_expected_latency_ns == planned_ns


def test_the_margin_never_plans_more_samples_than_loadgen_may_hold() -> None:
    """120 MultiStream queries of 65,536 samples (7.9 million, as measured) are within
    ``PLANNED_SAMPLES``; four or two times as many are not. The test is planned as measured,
    not refused for what a margin would add."""
    scenario = msgspec.convert(
        {"name": "MultiStream", "min_query_count": 64, "samples_per_query": 65_536}, Scenario
    )
    expected = 2 * 10**9 // 120  # 2 x 1 s of queries: 120
    settings = settings_for(scenario, expected_latency_ns=expected, batch_size=65_536)
    assert settings.multi_stream_expected_latency_ns == expected


def test_offline_is_planned_at_the_warm_ups_rate() -> None:
    scenario = msgspec.convert({"name": "Offline", "min_duration_ms": 1000}, Scenario)
    settings = settings_for(scenario, expected_latency_ns=5_000_000, batch_size=1)
    assert settings.offline_expected_qps == pytest.approx(200.0)


def test_a_generation_is_planned_from_its_fastest_warm_up_call() -> None:
    """A generation's warm-up makes few calls, its first ones slow (cold, or on a busy
    machine): the test is planned from the fastest, not from a median the slow calls set."""
    from types import SimpleNamespace

    from pinbench.worker.generation.run import _warm_up
    from pinbench.worker.stop import Stop

    took = [0.2, 0.02, 0.2, 0.2]  # seconds each call takes, in order (then 0.2)
    calls: list[int] = []

    def answer(index: int, first: Any) -> list[int]:
        time.sleep(took[min(len(calls), len(took) - 1)])
        calls.append(index)
        return [1]

    job: Any = SimpleNamespace(stop=Stop())
    expected = _warm_up(Any, [[1, 2]], 1, None, job, answer)  # type: ignore[arg-type]
    assert set(calls) == {0} and len(calls) >= len(took)
    assert 0.02e9 <= expected < 0.1e9  # the fastest call; the median is 0.2 s, ten times it
