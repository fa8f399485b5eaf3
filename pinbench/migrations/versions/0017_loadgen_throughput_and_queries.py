"""results: a LoadGen run's throughput_sps and queries_count are LoadGen's (decision 275)

Until this revision a run under LoadGen recorded pinbench's own span throughput (samples
answered over first query received → last framework call returned) as ``throughput_sps``
(``throughput_tps`` for tokens) and its count of framework calls as ``queries_count``: names
an MLPerf reader takes for LoadGen's figures, which they were not. Every run whose details
keep LoadGen's summary keeps those numbers under ``framework_throughput_sps``,
``framework_throughput_tps`` and ``framework_calls_count``, and gains LoadGen's own figures,
read from that summary, under the old names: per scenario the entries of
``pinbench.worker.latency_metrics.THROUGHPUT_KEYS`` as of this revision, and
``result_query_count``. A generation run's ``completed_tps`` (LoadGen's completed tokens per
second, the entry ``throughput_tps`` now reads in Server) is dropped where ``throughput_tps``
holds the same number: one name per number; a series threshold on it moves to
``throughput_tps`` (where that series has none). Operator (L0) and training runs never ran
LoadGen: their names stay. An attested ``results.json`` stays the record as it was made.

The work is done in Python over each run's parsed details (a run's details may hold text
PostgreSQL's JSON operators refuse, such as U+0000 in a generated answer); a run is measured
under LoadGen when its ``details.loadgen`` is an object.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 15:20:00.000000
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RENAMED = (
    ("throughput_sps", "framework_throughput_sps"),
    ("throughput_tps", "framework_throughput_tps"),
    ("queries_count", "framework_calls_count"),
)
"""(name before this revision, pinbench's figure's name from it on)."""

LOADGEN = (
    ("throughput_sps", "SingleStream", "result_qps_with_loadgen_overhead", "samples/s"),
    ("throughput_tps", "SingleStream", "result_token_throughput_with_loadgen_overhead", "tokens/s"),
    ("throughput_sps", "Server", "result_completed_samples_per_sec", "samples/s"),
    ("throughput_tps", "Server", "result_completed_tokens_per_second", "tokens/s"),
    ("throughput_sps", "Offline", "result_samples_per_second", "samples/s"),
    ("throughput_tps", "Offline", "result_tokens_per_second", "tokens/s"),
    *(
        ("queries_count", scenario, "result_query_count", "count")
        for scenario in ("SingleStream", "MultiStream", "Server", "Offline")
    ),
)
"""(metric, scenario, LoadGen's detail-log entry, unit): what each run gains."""


def _measured() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Each run measured under LoadGen: its id, its LoadGen entries and its details."""
    bind = op.get_bind()
    for run_id, raw in bind.execute(sa.text("SELECT id, details FROM runs")).all():
        details = json.loads(raw) if isinstance(raw, str | bytes) else raw
        loadgen = details.get("loadgen") if isinstance(details, dict) else None
        if isinstance(loadgen, dict):
            yield str(run_id), loadgen, details


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _results(run_id: str) -> dict[str, float]:
    rows = op.get_bind().execute(
        sa.text("SELECT metric, value FROM results WHERE run_id = :r"), {"r": run_id}
    )
    return {str(metric): float(value) for metric, value in rows}


def _rename(run_id: str, old: str, new: str) -> None:
    op.get_bind().execute(
        sa.text("UPDATE results SET metric = :new WHERE run_id = :r AND metric = :old"),
        {"new": new, "old": old, "r": run_id},
    )


def _insert(run_id: str, metric: str, value: float, unit: str) -> None:
    op.get_bind().execute(
        sa.text("INSERT INTO results (run_id, metric, value, unit) VALUES (:r, :m, :v, :u)"),
        {"r": run_id, "m": metric, "v": value, "u": unit},
    )


def _delete(run_id: str, metric: str) -> None:
    op.get_bind().execute(
        sa.text("DELETE FROM results WHERE run_id = :r AND metric = :m"),
        {"r": run_id, "m": metric},
    )


def upgrade() -> None:
    for run_id, loadgen, _ in list(_measured()):
        held = _results(run_id)
        for old, new in RENAMED:
            if old in held and new not in held:
                _rename(run_id, old, new)
        held = _results(run_id)
        scenario = loadgen.get("effective_scenario")
        for metric, where, entry, unit in LOADGEN:
            value = _number(loadgen.get(entry))
            if where == scenario and value is not None and metric not in held:
                _insert(run_id, metric, value, unit)
                held[metric] = value
        if "completed_tps" in held and held.get("throughput_tps") == held["completed_tps"]:
            _delete(run_id, "completed_tps")  # the same number, under LoadGen's own name
    op.get_bind().execute(
        sa.text(
            "UPDATE series_thresholds SET metric = 'throughput_tps' WHERE metric = "
            "'completed_tps' AND NOT EXISTS (SELECT 1 FROM series_thresholds t WHERE "
            "t.series = series_thresholds.series AND t.metric = 'throughput_tps')"
        )
    )


def downgrade() -> None:
    op.get_bind().execute(
        sa.text(
            "UPDATE series_thresholds SET metric = 'completed_tps' WHERE metric = "
            "'throughput_tps' AND NOT EXISTS (SELECT 1 FROM series_thresholds t WHERE "
            "t.series = series_thresholds.series AND t.metric = 'completed_tps')"
        )
    )
    for run_id, loadgen, details in list(_measured()):
        held = _results(run_id)
        if not any(new in held for _, new in RENAMED):
            continue  # recorded by code before this revision, or never measured
        for old, _ in RENAMED:
            if old in held:
                _delete(run_id, old)
        for old, new in RENAMED:
            if new in held:
                _rename(run_id, new, old)
        completed = _number(loadgen.get("result_completed_tokens_per_second"))
        generated = isinstance(details.get("generation"), dict)
        if generated and completed and "completed_tps" not in _results(run_id):
            _insert(run_id, "completed_tps", completed, "tokens/s")
