"""The SQL schema: migrations match the models, one head, upgrade from empty on both engines."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text

from pinbench.db import migrate, schema
from pinbench.db.engine import make_engine
from pinbench.db.schema import SchemaNotCurrent, current_revision
from pinbench.workspace import Workspace
from tests.helpers import PLACEHOLDER_LOCKFILE, insert_placeholder_lockfile

TABLES = {
    "artifacts",
    "artifact_files",
    "lockfiles",
    "runs",
    "run_facets",
    "results",
    "users",
    "namespace_members",
    "api_tokens",
    "server_instances",
    "systems",
    "signing_keys",
    "attestations",
    "ui_sessions",
    "series_thresholds",
    "alerts",
    "studies",
    "study_cells",
    "alembic_version",
}


def test_exactly_one_head_and_the_code_knows_it() -> None:
    assert migrate.heads() == [schema.HEAD_REVISION]


def test_upgrade_from_empty_then_autogenerate_finds_no_difference(database_url: str) -> None:
    engine = make_engine(database_url)
    assert current_revision(engine) is None
    migrate.upgrade(engine)
    assert current_revision(engine) == schema.HEAD_REVISION
    assert set(inspect(engine).get_table_names()) == TABLES
    assert migrate.schema_diff(engine) == []
    engine.dispose()


def test_every_revision_downgrades_and_upgrades_again(database_url: str) -> None:
    engine = make_engine(database_url)
    migrate.upgrade(engine)
    migrate.downgrade(engine, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(engine)
    assert migrate.schema_diff(engine) == []
    engine.dispose()


def test_database_on_an_older_revision_is_refused(ws: Workspace) -> None:
    migrate.downgrade(ws.engine, "0001")
    fresh = Workspace(ws.settings)
    with pytest.raises(SchemaNotCurrent, match="pinbench db upgrade"), fresh.transaction():
        pass
    fresh.close()


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(ws: Workspace) -> None:
    with ws.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000


def test_upgrade_from_every_earlier_revision_keeps_data(database_url: str) -> None:
    """From each earlier revision, with a row in place, upgrade reaches head and keeps it."""
    engine = make_engine(database_url)
    earlier = migrate.revisions()[:-1]
    assert earlier, "there is more than one revision"
    for revision in earlier:
        migrate.downgrade(engine, "base")
        migrate.upgrade(engine, revision)
        with engine.begin() as conn:
            insert_placeholder_lockfile(conn)
        migrate.upgrade(engine)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM lockfiles")).scalar() == 1, revision
        assert migrate.schema_diff(engine) == [], revision
    engine.dispose()


def test_rouge_recorded_before_stemming_keeps_its_numbers_as_unstemmed(
    database_url: str,
) -> None:
    """Migration 0015 (decision 161): a run's ``rouge1``... recorded unstemmed are renamed
    ``*_unstemmed``, every other metric left alone; a downgrade gives the old names back."""
    engine = make_engine(database_url)
    migrate.downgrade(engine, "base")
    migrate.upgrade(engine, "0014")
    recorded = {"rouge1": 0.0522, "rouge2": 0.01, "rouge_l": 0.05, "exact_match": 0.0}
    with engine.begin() as conn:
        insert_placeholder_lockfile(conn)
        conn.execute(
            text(
                "INSERT INTO runs (id, lockfile_digest, status, runner, started_at, host) "
                "VALUES ('r1', :d, 'succeeded', 'local', CURRENT_TIMESTAMP, '{}')"
            ),
            {"d": PLACEHOLDER_LOCKFILE},
        )
        for metric, value in recorded.items():
            conn.execute(
                text(
                    "INSERT INTO results (run_id, metric, value, unit) "
                    "VALUES ('r1', :m, :v, 'fraction')"
                ),
                {"m": metric, "v": value},
            )

    def metrics() -> dict[str, float]:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT metric, value FROM results WHERE run_id = 'r1'"))
            return {metric: value for metric, value in rows}

    migrate.upgrade(engine, "0015")
    assert metrics() == {
        "rouge1_unstemmed": 0.0522,
        "rouge2_unstemmed": 0.01,
        "rouge_l_unstemmed": 0.05,
        "exact_match": 0.0,
    }
    migrate.downgrade(engine, "0014")
    assert metrics() == recorded
    migrate.upgrade(engine)
    engine.dispose()
