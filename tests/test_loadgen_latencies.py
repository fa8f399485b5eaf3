"""A scenario's latency percentiles are LoadGen's own: equal to its summary of the same run in
every scenario; the framework call's have their own names and LoadGen's percentile rule, which
is checked against LoadGen's raw per-sample latencies (its trace) as well (decision 159)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import msgspec
import numpy as np
import pytest
from sqlalchemy import text

from pinbench.db import migrate
from pinbench.db.engine import make_engine
from pinbench.registry.request import Scenario
from pinbench.worker.latency_metrics import series
from pinbench.worker.scenarios import Measurement, run_scenario
from tests.helpers import PLACEHOLDER_LOCKFILE, insert_placeholder_lockfile

FRACTIONS = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p97": 0.97, "p99": 0.99, "p99_9": 0.999}
"""LoadGen's ``latency_percentiles`` as its source writes them (``results.h``)."""
SUMMARY_PERCENTILES = {"50.00": "p50", "90.00": "p90", "95.00": "p95", "97.00": "p97",
                       "99.00": "p99", "99.90": "p99_9"}  # fmt: skip

SETTINGS: dict[str, dict[str, Any]] = {
    "SingleStream": {"percentile": 80.0},  # a target outside LoadGen's fixed percentiles
    "MultiStream": {"samples_per_query": 8},
    "Server": {"target_qps": 400.0},
    "Offline": {},
}


def _summary_stats(path: Path) -> dict[str, int]:
    """``mlperf_log_summary.txt`` read as a person reads it: the scenario's headline line
    (``80.0th percentile latency (ns) : N``) and the "Additional Stats" latencies (per query
    in MultiStream: the block under "Per-query latency")."""
    found: dict[str, int] = {}
    for line in path.read_text().splitlines():
        if m := re.match(r"^([0-9.]+)th percentile latency \(ns\) : ([0-9]+)$", line):
            found["target"] = int(m.group(2))
        elif m := re.match(r"^(Min|Max|Mean) latency \(ns\) +: ([0-9]+)$", line):
            found[m.group(1).lower()] = int(m.group(2))
        elif m := re.match(r"^([0-9.]+) percentile latency \(ns\) +: ([0-9]+)$", line):
            found[SUMMARY_PERCENTILES[m.group(1)]] = int(m.group(2))
    return found


def _measure(name: str, log_dir: Path) -> Measurement:
    settings = {"name": name, "min_duration_ms": 150, "min_query_count": 200, "seed": 3}
    scenario = msgspec.convert(settings | SETTINGS[name], Scenario)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((48, 16)).astype(np.float32)
    w = rng.standard_normal((16, 10)).astype(np.float32)
    batch = 4 if name == "Offline" else 1

    def predict(b: Any) -> dict[str, Any]:
        return {"y": np.asarray(b, dtype=np.float32) @ w}

    return run_scenario(
        predict, x, scenario, batch_size=batch, expected_latency_ns=50_000, log_dir=log_dir
    )


@pytest.mark.parametrize("name", list(SETTINGS))
def test_headline_latencies_equal_loadgens_summary(name: str, tmp_path: Path) -> None:
    m = _measure(name, tmp_path)
    metrics = m.summary()
    said = _summary_stats(tmp_path / "mlperf_log_summary.txt")
    for tag in FRACTIONS:
        assert metrics[f"latency_{tag}_ns"] == said[tag], tag
    for stat in ("mean", "min", "max"):
        assert metrics[f"latency_{stat}_ns"] == said[stat], stat
    if name == "SingleStream":  # the target percentile, read from LoadGen's headline line
        assert metrics["latency_p80_ns"] == said["target"]
    if name == "MultiStream":  # a query's latency: all its samples, not one framework call
        assert metrics["latency_p90_ns"] == said["target"]
        assert metrics["latency_p50_ns"] != metrics["framework_latency_p50_ns"]


@pytest.mark.parametrize("name", ["SingleStream", "Offline"])
def test_framework_series_has_its_own_name_and_loadgens_rule(name: str, tmp_path: Path) -> None:
    m = _measure(name, tmp_path)
    metrics = m.summary()
    calls = m.latencies_ns
    ordered = sorted(int(v) for v in calls)
    for tag, fraction in FRACTIONS.items():
        assert metrics[f"framework_latency_{tag}_ns"] == ordered[int(len(ordered) * fraction)]
    assert metrics["framework_latency_mean_ns"] == pytest.approx(sum(ordered) / len(ordered))
    assert metrics["framework_latency_min_ns"] == ordered[0]
    assert metrics["framework_latency_max_ns"] == ordered[-1]
    assert metrics["framework_calls_count"] == len(ordered)


@pytest.mark.parametrize(
    ("size", "fraction", "index"),
    [
        (1000, 0.999, 999),  # 0.999 * 1000 is 999.0000000000001 in binary: still 999
        (1000, 0.99, 990),
        (7, 0.5, 3),
        (10, 0.9, 9),  # 0.9 * 10 is 9.000000000000002: the largest, not an interpolation
        (1, 0.999, 0),
        (100, 0.97, 97),
    ],
)
def test_loadgens_rule_on_chosen_sizes(size: int, fraction: float, index: int) -> None:
    values = np.random.default_rng(size).permutation(np.arange(size, dtype=np.int64) * 10)
    tag = {v: k for k, v in FRACTIONS.items()}[fraction]
    assert series(values, "x")[f"x_{tag}_ns"] == index * 10


def test_no_values_have_no_percentile() -> None:
    assert series(np.zeros(0, dtype=np.int64), "framework_latency") == {}


def test_the_rule_is_loadgens_own_on_its_raw_latencies(tmp_path: Path) -> None:
    """LoadGen's trace holds every SingleStream sample's latency as LoadGen measured it (from
    its issue; in Offline and Server LoadGen counts from the scheduled time, which the trace
    does not hold); the rule applied to them gives exactly the percentiles of its detail log."""
    from pinbench.worker.loadgen_log import read_detail_log

    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.SingleStream
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = 100
    settings.min_query_count = 300
    settings.single_stream_expected_latency_ns = 50_000
    out = tmp_path
    logs = lg.LogSettings()
    logs.log_output.outdir = str(out)
    logs.log_output.copy_summary_to_stdout = False
    logs.enable_trace = True
    spin = np.random.default_rng(1)

    def issue(queries: list[Any]) -> None:
        for q in queries:
            np.linalg.svd(spin.standard_normal((8, 8)))  # some work of varying length
            lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0)])

    sut = lg.ConstructSUT(issue, lambda *a: None)
    qsl = lg.ConstructQSL(64, 64, lambda *a: None, lambda *a: None)
    try:
        lg.StartTestWithLogSettings(sut, qsl, settings, logs)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    # one event a line; LoadGen writes some lines that are not JSON (doubled quotes)
    samples = [
        json.loads(line.rstrip().rstrip(","))["args"]
        for line in (out / "mlperf_log_trace.json").read_text().splitlines()
        if line.startswith('{"name":"Sample"') and '"ph":"b"' in line
    ]
    raw = np.asarray([s["complete_ns"] - s["issue_start_ns"] for s in samples], dtype=np.int64)
    detail = read_detail_log(out / "mlperf_log_detail.txt")
    ours = series(raw, "x")
    assert raw.size == detail["result_query_count"] >= 300
    for spelled, tag in SUMMARY_PERCENTILES.items():
        assert ours[f"x_{tag}_ns"] == detail[f"result_{spelled}_percentile_latency_ns"], tag
    assert ours["x_min_ns"] == detail["result_min_latency_ns"]
    assert ours["x_max_ns"] == detail["result_max_latency_ns"]


# -- runs recorded before: every number kept under its new name (migration 0014) -------------

OLD = {"latency_p50_ns": 400.0, "latency_p90_ns": 410.0, "latency_p95_ns": 415.0,
       "latency_p99_ns": 500.0, "latency_p99_9_ns": 900.0, "latency_mean_ns": 420.5,
       "queries_count": 300.0, "top1": 0.9}  # fmt: skip
LOADGEN = {"effective_scenario": "SingleStream", "result_validity": "VALID",
           "result_50.00_percentile_latency_ns": 7000, "result_90.00_percentile_latency_ns": 9100,
           "result_95.00_percentile_latency_ns": 9900, "result_97.00_percentile_latency_ns": 11700,
           "result_99.00_percentile_latency_ns": 30000,
           "result_99.90_percentile_latency_ns": 103000,
           "result_min_latency_ns": 5300, "result_max_latency_ns": 829000,
           "result_mean_latency_ns": 8481}  # fmt: skip
MULTI = {"effective_scenario": "MultiStream", "result_50.00_percentile_latency_ns": 1,
         "result_50.00_percentile_per_query_latency_ns": 52000,
         "result_mean_query_latency_ns": 59000}  # fmt: skip


def _insert(
    conn: Any, run_id: str, details: dict[str, Any] | None, results: dict[str, float]
) -> None:
    conn.execute(
        text(
            "INSERT INTO runs (id, lockfile_digest, status, runner, started_at, host, details, "
            "trace_level) VALUES (:id, :d, 'succeeded', 'local', CURRENT_TIMESTAMP, '{}', "
            ":details, 'none')"
        ),
        {
            "id": run_id,
            "d": PLACEHOLDER_LOCKFILE,
            "details": None if details is None else json.dumps(details),
        },
    )
    for metric, value in results.items():
        conn.execute(
            text("INSERT INTO results (run_id, metric, value, unit) VALUES (:r, :m, :v, :u)"),
            {"r": run_id, "m": metric, "v": value, "u": "ns" if metric.endswith("_ns") else ""},
        )


def _results(conn: Any, run_id: str) -> dict[str, float]:
    rows = conn.execute(text("SELECT metric, value FROM results WHERE run_id = :r"), {"r": run_id})
    return {metric: value for metric, value in rows}


def test_upgrade_renames_the_framework_series_and_reads_loadgens(database_url: str) -> None:
    engine = make_engine(database_url)
    migrate.upgrade(engine, "0013")
    with engine.begin() as conn:
        insert_placeholder_lockfile(conn)
        _insert(conn, "perf", {"loadgen": LOADGEN}, OLD)
        _insert(conn, "multi", {"loadgen": MULTI}, {"latency_p50_ns": 3.0})
        _insert(conn, "accuracy", {"loadgen": {"effective_test_mode": "AccuracyOnly"}},
                {"latency_p50_ns": 2.0, "top1": 0.5})  # fmt: skip
        _insert(conn, "operator", {"validation": {}}, {"latency_p50_ns": 1.0})  # no LoadGen
        _insert(conn, "failed", None, {})
    migrate.upgrade(engine, "0016")  # 0017 renames queries_count (test_loadgen_throughput)
    with engine.connect() as conn:
        perf = _results(conn, "perf")
        multi = _results(conn, "multi")
        accuracy = _results(conn, "accuracy")
        operator = _results(conn, "operator")
    for name, value in OLD.items():  # nothing lost: each old number under its new name
        new = f"framework_{name}" if name.startswith("latency_") else name
        assert perf[new] == value, name
    for spelled, tag in SUMMARY_PERCENTILES.items():
        assert perf[f"latency_{tag}_ns"] == LOADGEN[f"result_{spelled}_percentile_latency_ns"]
    assert (perf["latency_mean_ns"], perf["latency_min_ns"], perf["latency_max_ns"]) == (
        8481, 5300, 829000,
    )  # fmt: skip
    assert not any(k.startswith(("ttft", "tpot")) for k in perf)  # LoadGen logged none
    assert multi == {"framework_latency_p50_ns": 3.0, "latency_p50_ns": 52000.0,
                     "latency_mean_ns": 59000.0}  # fmt: skip
    assert accuracy == {"framework_latency_p50_ns": 2.0, "top1": 0.5}
    assert operator == {"latency_p50_ns": 1.0}  # an operator's latency is its own
    migrate.downgrade(engine, "0013")  # and back: the names the old code reads
    with engine.connect() as conn:
        assert _results(conn, "perf") == OLD
        assert _results(conn, "multi") == {"latency_p50_ns": 3.0}
        assert _results(conn, "operator") == {"latency_p50_ns": 1.0}
    engine.dispose()


def test_runs_show_prints_loadgens_latency_beside_the_framework_calls() -> None:
    from rich.console import Console

    from pinbench.cli.run_view import latency_table
    from pinbench.run_figures import figures

    info = {"latency_p90_ns": 99_400.0, "framework_latency_p90_ns": 92_100.0,
            "framework_latency_p99_ns": 3_090_000.0, "ttft_p50_ns": 5_000_000.0}  # fmt: skip
    table = latency_table(figures(info).latencies)
    assert table is not None
    console = Console(record=True, width=100)
    console.print(table)
    lines = [line.split() for line in console.export_text().splitlines()]
    assert lines[0] == ["latency", "LoadGen", "framework", "call"]
    assert ["p90", "99.4", "µs", "92.1", "µs"] in lines
    assert ["p99", "3.09", "ms"] in lines  # recorded by one series only: the other is blank
    assert ["TTFT", "p50", "5.00", "ms"] in lines
    assert latency_table(figures({"top1": 0.5}).latencies) is None  # no latency: no table
