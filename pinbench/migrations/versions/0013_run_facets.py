"""run_facets: the combinations of filter columns runs have, kept by a trigger on runs

A listing filtered on two or more of model, model version, framework, framework version,
status and system looks up the combinations that match (a small table) and reads only their
runs through ``ix_runs_facet_started``, instead of reading the first filter's whole index range
and checking the others per row: a combination that matches nothing answers without reading a
run, a rare one reads its few runs (decision 158).

``runs.facet_id`` is set by the database itself, on every insert and on every update of one of
the six columns: a BEFORE trigger on PostgreSQL, AFTER triggers on SQLite (which cannot assign
NEW; they add a facet with ``INSERT ... WHERE NOT EXISTS``, not ``INSERT OR IGNORE``, whose
conflict clause an outer ``INSERT OR REPLACE`` would override, deleting the shared facet). A
later migration that rebuilds ``runs`` on SQLite (``batch_alter_table`` with a recreate) drops
these triggers and must create them again (``create_triggers``);
``tests/test_runs_listing.py`` checks that a run inserted or updated at head has its facet.

Runs recorded before get theirs here: one INSERT of the distinct combinations, one UPDATE.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 14:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("model", "model_version", "framework", "framework_version", "status", "system")
_NULLABLE = ("model", "model_version", "framework", "framework_version", "system")


def _same(left: str, right: str) -> str:
    """SQL true when the facet row ``left`` names the run ``right``'s combination (NULL and
    NULL alike; no name, version or system is ever empty, so '' stands for NULL)."""
    return " AND ".join(
        f"COALESCE({left}.{c}, '') = COALESCE({right}.{c}, '')"
        if c in _NULLABLE
        else f"{left}.{c} = {right}.{c}"
        for c in COLUMNS
    )


_LISTED = ", ".join(COLUMNS)
_NEW = ", ".join(f"NEW.{c}" for c in COLUMNS)
_KEY = ", ".join(f"(COALESCE({c}, ''))" if c in _NULLABLE else c for c in COLUMNS)
"""``uq_run_facets``'s columns, as ``ON CONFLICT`` names the index it may give way to."""

PG_FUNCTION = f"""
CREATE FUNCTION pinbench_run_facet() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    found integer;
BEGIN
    LOOP
        SELECT f.id INTO found FROM run_facets AS f WHERE {_same("f", "NEW")};
        EXIT WHEN found IS NOT NULL;
        -- a concurrent transaction adding the same combination wins: look it up again
        INSERT INTO run_facets ({_LISTED}) VALUES ({_NEW})
        ON CONFLICT ({_KEY}) DO NOTHING RETURNING id INTO found;
        EXIT WHEN found IS NOT NULL;
    END LOOP;
    NEW.facet_id := found;
    RETURN NEW;
END
$$
"""
PG_TRIGGER = f"""
CREATE TRIGGER runs_facet BEFORE INSERT OR UPDATE OF {_LISTED} ON runs
FOR EACH ROW EXECUTE FUNCTION pinbench_run_facet()
"""
_SQLITE_BODY = f"""
BEGIN
    INSERT INTO run_facets ({_LISTED})
    SELECT {_NEW} WHERE NOT EXISTS (SELECT 1 FROM run_facets AS f WHERE {_same("f", "NEW")});
    UPDATE runs SET facet_id = (SELECT f.id FROM run_facets AS f WHERE {_same("f", "NEW")})
    WHERE id = NEW.id;
END
"""
SQLITE_TRIGGERS = (
    f"CREATE TRIGGER runs_facet_insert AFTER INSERT ON runs {_SQLITE_BODY}",
    f"CREATE TRIGGER runs_facet_update AFTER UPDATE OF {_LISTED} ON runs {_SQLITE_BODY}",
)


def create_triggers() -> None:
    """The triggers that keep ``runs.facet_id``, for the database at hand."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute(PG_TRIGGER)
    else:
        for trigger in SQLITE_TRIGGERS:
            op.execute(trigger)


def drop_triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS runs_facet ON runs")
        op.execute("DROP FUNCTION IF EXISTS pinbench_run_facet()")
    else:
        op.execute("DROP TRIGGER IF EXISTS runs_facet_insert")
        op.execute("DROP TRIGGER IF EXISTS runs_facet_update")


def upgrade() -> None:
    op.create_table(
        "run_facets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("model_version", sa.String(length=200), nullable=True),
        sa.Column("framework", sa.String(length=200), nullable=True),
        sa.Column("framework_version", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("system", sa.String(length=63), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_run_facets",
        "run_facets",
        [sa.func.coalesce(sa.column(c), "") if c in _NULLABLE else sa.column(c) for c in COLUMNS],
        unique=True,
    )
    op.add_column("runs", sa.Column("facet_id", sa.Integer(), nullable=True))
    # NULL and '' are one value to the unique index: DISTINCT must not tell them apart
    distinct = ", ".join(f"NULLIF({c}, '')" if c in _NULLABLE else c for c in COLUMNS)
    op.execute(f"INSERT INTO run_facets ({_LISTED}) SELECT DISTINCT {distinct} FROM runs")
    op.execute(
        f"UPDATE runs SET facet_id = (SELECT f.id FROM run_facets AS f WHERE {_same('f', 'runs')})"
    )
    op.create_index("ix_runs_facet_started", "runs", ["facet_id", "started_at", "id"])
    if op.get_bind().dialect.name == "postgresql":
        # a per-facet row count for the planner: each facet's share of the runs (not an
        # average over facets) decides between reading a facet's runs and a filtered scan
        op.execute("ALTER TABLE runs ALTER COLUMN facet_id SET STATISTICS 1000")
    create_triggers()


def downgrade() -> None:
    drop_triggers()
    op.drop_index("ix_runs_facet_started", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("facet_id")
    op.drop_index("uq_run_facets", table_name="run_facets")
    op.drop_table("run_facets")
