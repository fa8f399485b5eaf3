"""A run's ``throughput_sps`` and ``queries_count`` are LoadGen's own, equal to its summary of
the same run in every scenario; pinbench's own figures have ``framework_`` names; runs recorded
before keep every number under the name that says whose it is (decision 275, migration 0017)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pinbench.db import migrate
from pinbench.db.engine import make_engine
from pinbench.worker.loadgen_log import read_detail_log
from tests.helpers import insert_placeholder_lockfile
from tests.test_loadgen_latencies import SETTINGS, _insert, _measure, _results

HEADLINE = {
    "Offline": r"^Samples per second: ([0-9.]+)$",
    "Server": r"^Completed samples per second +: ([0-9.]+)$",
    "SingleStream": r"^QPS w/ loadgen overhead +: ([0-9.]+)$",
}
"""The throughput line of ``mlperf_log_summary.txt`` a person reads, per scenario; LoadGen
prints none for MultiStream."""


def _said(path: Path, pattern: str) -> float:
    """The figure on the summary's line."""
    for line in path.read_text().splitlines():
        if found := re.match(pattern, line.strip()):
            return float(found.group(1))
    raise AssertionError(f"no line {pattern!r} in {path}")


@pytest.mark.parametrize("name", list(SETTINGS))
def test_throughput_and_queries_are_loadgens(name: str, tmp_path: Path) -> None:
    m = _measure(name, tmp_path)
    metrics = m.summary()
    detail = read_detail_log(tmp_path / "mlperf_log_detail.txt")
    assert metrics["queries_count"] == detail["result_query_count"]
    assert metrics["framework_calls_count"] == m.latencies_ns.size
    if name == "Offline":  # one query of every sample, answered in batches of four
        assert metrics["queries_count"] == 1 and metrics["framework_calls_count"] > 1
    if name == "MultiStream":  # a query is 8 samples, one framework call each
        assert metrics["framework_calls_count"] == 8 * metrics["queries_count"]
        assert "throughput_sps" not in metrics  # LoadGen reports none
    else:
        # as the summary prints it (the detail log rounds SingleStream's QPS to a whole number)
        assert metrics["throughput_sps"] == _said(
            tmp_path / "mlperf_log_summary.txt", HEADLINE[name]
        )
    span = m.duration_ns / 1e9
    assert metrics["framework_throughput_sps"] == pytest.approx(m.samples / span)


# -- runs recorded before: every number kept under its new name (migration 0017) -------------

BEFORE = {"throughput_sps": 12092.51, "queries_count": 62436.0, "samples_count": 62436.0,
          "latency_p50_ns": 9.0}  # fmt: skip
RUNS: dict[str, tuple[dict[str, Any] | None, dict[str, float], dict[str, float]]] = {
    # run: (details, results before, what 0017 adds from LoadGen's log)
    "offline": (
        {
            "loadgen": {
                "effective_scenario": "Offline",
                "result_samples_per_second": 11934.5,
                "result_query_count": 1,
            }
        },
        BEFORE,
        {"throughput_sps": 11934.5, "queries_count": 1.0},
    ),
    "server": (
        {
            "loadgen": {
                "effective_scenario": "Server",
                "result_completed_samples_per_sec": 491.77,
                "result_scheduled_samples_per_sec": 492.0,
                "result_query_count": 900,
                "result_completed_tokens_per_second": 2000.5,
            },
            "generation": {},
        },
        {**BEFORE, "throughput_tps": 2100.0, "completed_tps": 2000.5},
        {"throughput_sps": 491.77, "queries_count": 900.0, "throughput_tps": 2000.5},
    ),
    "single": (
        {
            "loadgen": {
                "effective_scenario": "SingleStream",
                "result_qps_with_loadgen_overhead": 1500.25,
                "result_query_count": 64,
            }
        },
        BEFORE,
        {"throughput_sps": 1500.25, "queries_count": 64.0},
    ),
    "multi": (
        {"loadgen": {"effective_scenario": "MultiStream", "result_query_count": 2653}},
        BEFORE,
        {"queries_count": 2653.0},  # LoadGen reports no MultiStream throughput
    ),
    "accuracy": (
        {"loadgen": {"effective_test_mode": "AccuracyOnly"}},
        {"queries_count": 5.0, "top1": 0.5},
        {},
    ),
    "multistream generation": (  # LoadGen logs completed tokens/s here too: kept, not doubled
        {
            "loadgen": {
                "effective_scenario": "MultiStream",
                "result_completed_tokens_per_second": 70,
                "result_query_count": 10,
            },
            "generation": {},
        },
        {**BEFORE, "throughput_tps": 80.0, "completed_tps": 70.0},
        {"queries_count": 10.0},
    ),
    "an answer holding U+0000": (  # PostgreSQL's JSON operators refuse it; Python reads it
        {
            "loadgen": {"effective_scenario": "Offline", "result_samples_per_second": 5.0},
            "generation": {"samples": [{"answer": "a\u0000b"}]},
        },
        BEFORE,
        {"throughput_sps": 5.0},
    ),
}
OWN: dict[str, tuple[dict[str, Any] | None, dict[str, float]]] = {
    "operator": ({"validation": {}}, {"queries_count": 5.0}),
    "training": ({"training": {}}, {"throughput_sps": 80.0}),
    "loadgen null": ({"loadgen": None}, {"throughput_sps": 3.0, "queries_count": 2.0}),
    "span figures, no LoadGen log": (
        {"generation": {}},
        {"throughput_tps": 10.0, "completed_tps": 10.0},
    ),
}
"""Runs that never ran LoadGen (or kept no log of it): their figures are their own, and keep
their names."""
NEW_NAMES = {"throughput_sps": "framework_throughput_sps",
             "throughput_tps": "framework_throughput_tps",
             "queries_count": "framework_calls_count"}  # fmt: skip


def test_upgrade_keeps_pinbenchs_figures_and_reads_loadgens(database_url: str) -> None:
    engine = make_engine(database_url)
    migrate.upgrade(engine, "0016")
    with engine.begin() as conn:
        insert_placeholder_lockfile(conn)
        for run_id, (details, before, _) in RUNS.items():
            _insert(conn, run_id, details, before)
        for run_id, (details, results) in OWN.items():
            _insert(conn, run_id, details, results)
    migrate.upgrade(engine, "0017")
    with engine.connect() as conn:
        after = {run_id: _results(conn, run_id) for run_id in [*RUNS, *OWN]}
    for run_id, (_, before, added) in RUNS.items():
        kept = {NEW_NAMES.get(k, k): v for k, v in before.items()}
        if "completed_tps" in kept and added.get("throughput_tps") == kept["completed_tps"]:
            del kept["completed_tps"]  # the same number, under LoadGen's own name
        assert after[run_id] == {**kept, **added}, run_id
    assert "completed_tps" not in after["server"]
    for run_id, (_, results) in OWN.items():
        assert after[run_id] == results, run_id
    migrate.downgrade(engine, "0016")  # and back: the names the old code reads
    with engine.connect() as conn:
        for run_id, (_, before, _) in RUNS.items():
            assert _results(conn, run_id) == before, run_id
        for run_id, (_, results) in OWN.items():
            assert _results(conn, run_id) == results, run_id
    engine.dispose()


def test_details_kept_json_is_what_the_migration_reads() -> None:
    """The entries the migration reads are the ones the code reads (one table, two copies
    that must agree: the migration is frozen at its revision)."""
    from pinbench.migrations.versions import __name__ as versions
    from pinbench.worker.latency_metrics import THROUGHPUT_KEYS

    migration = __import__(f"{versions}.0017_loadgen_throughput_and_queries", fromlist=["x"])
    frozen = {(s, m): e for m, s, e, _ in migration.LOADGEN if m != "queries_count"}
    current = {(s, m): e for s, pairs in THROUGHPUT_KEYS.items() for m, e in pairs}
    assert frozen == current
    assert json.dumps(sorted(frozen)) == json.dumps(sorted(current))


# -- a throughput LoadGen gave no number of: absent, with its reason (issue 72, item 10) -------

TPS = "result_token_throughput_with_loadgen_overhead"
UNLOGGED = [
    # (case, scenario, a token run, the detail log's entries, the reasons)
    ("logged", "SingleStream", True, {"result_qps_with_loadgen_overhead": 40.0, TPS: 480.0}, {}),
    (
        "no token entry",
        "SingleStream",
        True,
        {"result_qps_with_loadgen_overhead": 40.0},
        {"throughput_tps": f"LoadGen's detail log holds no {TPS}"},
    ),
    (
        "a division by zero, kept as text",
        "Server",
        True,
        {"result_completed_samples_per_sec": 3.0, "result_completed_tokens_per_second": "Infinity"},
        {
            "throughput_tps": "LoadGen logged result_completed_tokens_per_second as 'Infinity', "
            "not a number of throughput_tps"
        },
    ),
    (
        "no tokens asked of a run without them",
        "Offline",
        False,
        {"result_samples_per_second": 9.0},
        {},
    ),
    (
        "one query: LoadGen's 0 is no throughput",
        "SingleStream",
        False,
        {"result_qps_with_loadgen_overhead": 0, "result_query_count": 1},
        {"throughput_sps": "one query: LoadGen's result_qps_with_loadgen_overhead counts"},
    ),
    ("MultiStream defines none", "MultiStream", True, {}, {}),
]


@pytest.mark.parametrize(
    ("scenario", "tokens", "entries", "reasons"),
    [case[1:] for case in UNLOGGED],
    ids=[case[0] for case in UNLOGGED],
)
def test_a_throughput_loadgen_did_not_give_is_absent_with_its_reason(
    scenario: str, tokens: bool, entries: dict[str, Any], reasons: dict[str, str]
) -> None:
    from pinbench.worker.latency_metrics import loadgen_counts, unlogged

    found = unlogged(entries, scenario, tokens=tokens)
    assert sorted(found) == sorted(reasons)
    for name, reason in reasons.items():
        assert found[name].startswith(reason)
    counts = loadgen_counts(entries, scenario)
    assert not set(found) & set(counts)  # never a number where a reason is given
    assert all(v > 0 for k, v in counts.items() if k.startswith("throughput_"))


def test_a_non_finite_entry_is_read_as_text_a_json_column_takes(tmp_path: Path) -> None:
    """LoadGen writes a division by zero as ``Infinity`` or ``NaN`` (logging.cc)."""
    log = tmp_path / "mlperf_log_detail.txt"
    lines = [
        ':::MLLOG {"key": "result_completed_tokens_per_second", "value": Infinity}',
        ':::MLLOG {"key": "result_token_throughput", "value": NaN}',
        ':::MLLOG {"key": "result_query_count", "value": 3}',
    ]
    log.write_text("\n".join(lines) + "\n")
    read = read_detail_log(log)
    assert read == {
        "result_completed_tokens_per_second": "Infinity",
        "result_token_throughput": "NaN",
        "result_query_count": 3,
    }
    json.dumps(read, allow_nan=False)  # plain JSON: PostgreSQL's JSON column refuses NaN


def test_a_one_query_run_records_no_throughput_and_says_why(digits: Any) -> None:
    from pinbench.evaluator.records.run_view import show_run
    from pinbench.evaluator.run import run_lockfile
    from pinbench.registry import service
    from pinbench.registry.request import parse_request
    from tests.helpers import DIGITS

    one = {"mode": "performance", "min_duration_ms": 0, "min_query_count": 1, "max_query_count": 1}
    lock = service.lock(digits, parse_request({**DIGITS, "scenario": one}))[0]
    shown = show_run(digits, run_lockfile(digits, lock, say=lambda _: None).id)
    assert shown["details"]["loadgen"]["result_qps_with_loadgen_overhead"] == 0  # LoadGen's
    assert "throughput_sps" not in shown  # never its 0.0
    assert "one query" in shown["details"]["undefined_metrics"]["throughput_sps"]
    assert shown["queries_count"] == 1.0
