"""A database a newer pinbench upgraded is refused in one line naming its revision and what
to do (issue 38 item 13a): older code used to send the user to ``pinbench db upgrade``, which
then crashed with Alembic's "Can't locate revision". On SQLite and a real PostgreSQL, run as
a user runs it: the console entry, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from pinbench.db import migrate, schema
from pinbench.db.engine import make_engine

FUTURE = "0999"
"""A revision id no pinbench migration of this code defines (a newer pinbench's)."""


def _pinbench(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PINBENCH_HOME": str(home), "PINBENCH_DATABASE_URL": url}
    env.pop("PINBENCH_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "pinbench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_known_revisions_are_alembics() -> None:
    """``known_revisions`` reads the migrations' file names; Alembic reads their contents."""
    assert schema.known_revisions() == frozenset(migrate.revisions())
    assert schema.HEAD_REVISION in schema.known_revisions()


@pytest.mark.parametrize(
    "command",
    [("db", "check"), ("list",), ("db", "upgrade"), ("init",)],
)
def test_a_database_upgraded_by_a_newer_pinbench_is_named_in_one_line(
    tmp_path: Path, database_url: str, command: tuple[str, ...]
) -> None:
    home = tmp_path / "home"
    made = _pinbench(home, database_url, "init")
    assert made.returncode == 0, made.stderr
    engine = make_engine(database_url)
    with engine.begin() as conn:  # what a newer pinbench's `db upgrade` leaves
        conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": FUTURE})

    result = _pinbench(home, database_url, *command)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Can't locate revision" not in message
    assert len(result.stderr.strip().splitlines()) <= 4, result.stderr  # one message, wrapped
    assert message.startswith(
        f"error: the database schema is at revision {FUTURE}, which this pinbench "
        f"({schema.pinbench_version()}, schema {schema.HEAD_REVISION}) does not know: "
        "a newer pinbench upgraded it"
    ), message
    assert "run `pinbench db upgrade`" not in message  # it would not help
    with engine.connect() as conn:  # nothing was changed
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == FUTURE
    engine.dispose()


def test_db_current_still_shows_the_revision(tmp_path: Path) -> None:
    """``db current`` reports, it does not refuse: it shows the unknown revision as it is."""
    url = f"sqlite:///{tmp_path / 'p.db'}"
    assert _pinbench(tmp_path / "home", url, "init").returncode == 0
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": FUTURE})
    engine.dispose()
    shown = _pinbench(tmp_path / "home", url, "db", "current")
    assert shown.returncode == 0, shown.stderr
    assert f"current: {FUTURE}  head: {schema.HEAD_REVISION}" in shown.stdout
