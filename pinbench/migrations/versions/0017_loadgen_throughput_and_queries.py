"""results: a LoadGen run's throughput_sps and queries_count are LoadGen's (decision 275)

Until this revision a run under LoadGen recorded pinbench's own span throughput (samples
answered over first query received → last framework call returned) as ``throughput_sps``
(``throughput_tps`` for tokens) and its count of framework calls as ``queries_count``: names
an MLPerf reader takes for LoadGen's figures, which they were not. Every run whose details
keep LoadGen's summary keeps those numbers under ``framework_throughput_sps``,
``framework_throughput_tps`` and ``framework_calls_count``, and gains LoadGen's own figures,
read from that summary, under the old names: per scenario the entries of
``pinbench.evaluator.latency_metrics.THROUGHPUT_KEYS`` as of this revision, and
``result_query_count``. A generation run's ``completed_tps`` (LoadGen's completed tokens per
second, the same entry ``throughput_tps`` now reads in SingleStream and Server) is dropped
where ``throughput_tps`` holds it: one name per number. Operator (L0) and training runs never
ran LoadGen: their names stay. An attested ``results.json`` stays the record as it was made.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 15:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

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
    ("throughput_tps", "SingleStream", "result_completed_tokens_per_second", "tokens/s"),
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


def _sql() -> dict[str, str]:
    """Per dialect: a run measured under LoadGen; its scenario; a LoadGen entry as a number."""
    if op.get_bind().dialect.name == "postgresql":
        return {
            "measured": "(r.details::jsonb -> 'loadgen') IS NOT NULL",
            "scenario": "(r.details::jsonb -> 'loadgen' ->> 'effective_scenario')",
            "entry": "jsonb_typeof(r.details::jsonb -> 'loadgen' -> k.entry) = 'number'",
            "value": "(r.details::jsonb -> 'loadgen' ->> k.entry)::double precision",
        }
    return {
        "measured": "json_extract(r.details, '$.loadgen') IS NOT NULL",
        "scenario": "json_extract(r.details, '$.loadgen.effective_scenario')",
        "entry": "json_type(r.details, '$.loadgen.\"' || k.entry || '\"') IN ('integer', 'real')",
        "value": "CAST(json_extract(r.details, '$.loadgen.\"' || k.entry || '\"') AS REAL)",
    }


def _measured() -> str:
    return f"SELECT r.id FROM runs r WHERE {_sql()['measured']}"


def upgrade() -> None:
    sql = _sql()
    for old, new in RENAMED:  # constants of this file, never input
        op.execute(
            f"UPDATE results SET metric = '{new}' "
            f"WHERE metric = '{old}' AND run_id IN ({_measured()})"
        )
    values = ", ".join(f"('{m}', '{s}', '{e}', '{u}')" for m, s, e, u in LOADGEN)
    op.execute(
        f"WITH k(metric, scenario, entry, unit) AS (VALUES {values}) "
        "INSERT INTO results (run_id, metric, value, unit) "
        f"SELECT r.id, k.metric, {sql['value']}, k.unit "
        "FROM runs r JOIN k ON k.scenario = " + sql["scenario"] + " "
        f"WHERE {sql['measured']} AND {sql['entry']} "
        "AND NOT EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id "
        "AND x.metric = k.metric)"
    )
    op.execute(
        "DELETE FROM results WHERE metric = 'completed_tps' AND run_id IN "
        "(SELECT run_id FROM results WHERE metric = 'throughput_tps')"
    )


def downgrade() -> None:
    measured = _measured()
    sql = _sql()
    op.execute(
        "WITH k(entry) AS (VALUES ('result_completed_tokens_per_second')) "
        "INSERT INTO results (run_id, metric, value, unit) "
        f"SELECT r.id, 'completed_tps', {sql['value']}, 'tokens/s' FROM runs r CROSS JOIN k "
        f"WHERE {sql['measured']} AND {sql['entry']} AND {sql['value']} > 0 "
        "AND r.id IN (SELECT run_id FROM results WHERE metric = 'framework_throughput_tps')"
    )
    names = ", ".join(f"'{old}'" for old, _ in RENAMED)
    op.execute(f"DELETE FROM results WHERE metric IN ({names}) AND run_id IN ({measured})")
    for old, new in RENAMED:
        op.execute(
            f"UPDATE results SET metric = '{old}' WHERE metric = '{new}' AND run_id IN ({measured})"
        )
