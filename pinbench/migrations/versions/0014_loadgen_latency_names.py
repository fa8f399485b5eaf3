"""results: a scenario's latency_* are LoadGen's; the framework call's are framework_latency_*

Until this revision a scenario run's ``latency_pXX_ns`` (and a generation run's ``ttft_*`` and
``tpot_*``) were NumPy's interpolated percentiles of the framework-call times, not the LoadGen
figures an MLPerf reader takes them for (decision 159). Every run that measured under LoadGen
(its ``details`` keep LoadGen's summary) keeps each number under its new name,
``framework_latency_p90_ns`` and so on, and gains LoadGen's own figures, read from that summary
under the names the old ones had. Operator (L0) runs never ran LoadGen: their names stay. The
rerun verdict compares the raw framework-call latencies, which do not change.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 20:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_TAGS = ("p50", "p90", "p95", "p99", "p99_9", "mean")
RENAMED = tuple(f"{series}_{tag}_ns" for series in ("latency", "ttft", "tpot") for tag in _OLD_TAGS)
"""What the code before this revision recorded from the framework calls."""

_PERCENTILES = (
    ("p50", "50.00"),
    ("p90", "90.00"),
    ("p95", "95.00"),
    ("p97", "97.00"),
    ("p99", "99.00"),
    ("p99_9", "99.90"),
)


def _loadgen_keys() -> list[tuple[str, str, str]]:
    """(metric, LoadGen's key per sample, LoadGen's key in MultiStream): the detail log's
    entries each headline metric is read from (``pinbench.worker.latency_metrics`` as of
    this revision)."""
    rows = []
    for tag, spelled in _PERCENTILES:
        rows.append(
            (
                f"latency_{tag}_ns",
                f"result_{spelled}_percentile_latency_ns",
                f"result_{spelled}_percentile_per_query_latency_ns",
            )
        )
        for metric, key in (
            (f"ttft_{tag}_ns", f"result_first_token_{spelled}_percentile_latency_ns"),
            (f"tpot_{tag}_ns", f"result_time_per_output_token_{spelled}_percentile_ns"),
        ):
            rows.append((metric, key, key))
    for stat in ("mean", "min", "max"):
        rows.append(
            (f"latency_{stat}_ns", f"result_{stat}_latency_ns", f"result_{stat}_query_latency_ns")
        )
        first, per_token = (
            f"result_first_token_{stat}_latency_ns",
            f"result_time_to_output_token_{stat}",
        )
        rows.append((f"ttft_{stat}_ns", first, first))
        rows.append((f"tpot_{stat}_ns", per_token, per_token))
    return rows


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)  # constants of this file, never input


def _sql() -> dict[str, str]:
    """Per dialect: a run measured under LoadGen; a LoadGen entry of its details as a number."""
    if op.get_bind().dialect.name == "postgresql":
        return {
            "measured": "(r.details::jsonb -> 'loadgen') IS NOT NULL",
            "scenario": "(r.details::jsonb -> 'loadgen' ->> 'effective_scenario')",
            "entry": "jsonb_typeof(r.details::jsonb -> 'loadgen' -> ({key})) = 'number'",
            "value": "(r.details::jsonb -> 'loadgen' ->> ({key}))::double precision",
        }
    return {
        "measured": "json_extract(r.details, '$.loadgen') IS NOT NULL",
        "scenario": "json_extract(r.details, '$.loadgen.effective_scenario')",
        "entry": "json_type(r.details, '$.loadgen.\"' || ({key}) || '\"') IN ('integer', 'real')",
        "value": "CAST(json_extract(r.details, '$.loadgen.\"' || ({key}) || '\"') AS REAL)",
    }


def upgrade() -> None:
    sql = _sql()
    measured = f"SELECT r.id FROM runs r WHERE {sql['measured']}"
    op.execute(
        f"UPDATE results SET metric = 'framework_' || metric "
        f"WHERE metric IN ({_quoted(RENAMED)}) AND run_id IN ({measured})"
    )
    values = ", ".join(f"('{m}', '{sample}', '{query}')" for m, sample, query in _loadgen_keys())
    key = f"CASE WHEN {sql['scenario']} = 'MultiStream' THEN k.per_query ELSE k.per_sample END"
    op.execute(
        f"WITH k(metric, per_sample, per_query) AS (VALUES {values}) "
        "INSERT INTO results (run_id, metric, value, unit) "
        f"SELECT r.id, k.metric, {sql['value'].format(key=key)}, 'ns' "
        "FROM runs r CROSS JOIN k "
        f"WHERE {sql['measured']} AND {sql['entry'].format(key=key)} "
        "AND EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id "
        "AND x.metric = 'framework_latency_p50_ns')"
    )


def downgrade() -> None:
    sql = _sql()
    measured = f"SELECT r.id FROM runs r WHERE {sql['measured']}"
    headline = [m for m, _, _ in _loadgen_keys()]
    op.execute(
        f"DELETE FROM results WHERE metric IN ({_quoted(headline)}) AND run_id IN ({measured})"
    )
    op.execute(
        "UPDATE results SET metric = substr(metric, length('framework_') + 1) "
        f"WHERE metric IN ({_quoted(['framework_' + m for m in RENAMED])})"
    )
    op.execute("DELETE FROM results WHERE substr(metric, 1, 10) = 'framework_'")
