"""A database that cannot be used is said in one line, never a traceback (issue 34 item 7):
a PostgreSQL URL without its driver says what to install, a wrong password says so, and
neither shows the password. Run as a user runs it: the console entry, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg import postgres_server

WRONG = "not-the-password"

BLOCK_PSYCOPG = (
    "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg2'] = None; "
    "sys.argv = ['pinbench', *sys.argv[1:]]; "
    "from pinbench.entry import entrypoint; entrypoint()"
)
"""``pinbench ARGS`` in a Python where importing psycopg fails, as where it is not installed."""


def _pinbench(
    home: Path, url: str, *args: str, without_psycopg: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PINBENCH_HOME": str(home), "PINBENCH_DATABASE_URL": url}
    env.pop("PINBENCH_URL", None)
    if without_psycopg:
        cmd = [sys.executable, "-c", BLOCK_PSYCOPG, *args]
    else:
        cmd = [sys.executable, "-m", "pinbench", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://pinbench:{WRONG}@127.0.0.1:5432/pinbench",
        f"postgresql://pinbench:{WRONG}@127.0.0.1:5432/pinbench",  # SQLAlchemy's default driver
    ],
)
@pytest.mark.parametrize("command", [("init",), ("list",), ("db", "current")])
def test_a_postgresql_url_without_psycopg_says_what_to_install(
    tmp_path: Path, url: str, command: tuple[str, ...]
) -> None:
    home = tmp_path / "home"
    result = _pinbench(home, url, *command, without_psycopg=True)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'pinbench[postgres]'" in result.stderr
    assert WRONG not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) <= 2  # one message (Rich may wrap it)
    assert not home.exists()  # refused before anything was made


def test_an_unknown_database_url_is_refused_in_one_line(tmp_path: Path) -> None:
    result = _pinbench(tmp_path / "home", "nosuchdb://x/y", "init")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "the database URL nosuchdb://x/y cannot be used" in " ".join(result.stderr.split())


@pytest.fixture(scope="module")
def guarded() -> Iterator[str]:
    """A PostgreSQL server whose TCP connections need the password ``right``."""
    with postgres_server(password="right") as url:
        yield url


def test_init_with_a_wrong_password_prints_one_clear_line(guarded: str, tmp_path: Path) -> None:
    wrong = guarded.replace("pinbench:right@", f"pinbench:{WRONG}@")
    result = _pinbench(tmp_path / "home", wrong, "init")
    message = " ".join(result.stderr.split())
    assert result.returncode == 3, result.stderr  # the system could not be used
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 4, result.stderr  # was 146 lines
    assert message.startswith("error: cannot connect to the database postgresql+psycopg://")
    assert 'password authentication failed for user "pinbench"' in message
    assert WRONG not in result.stderr + result.stdout and "pinbench:***@" in message
    # the same through a command that reads, and through one that writes
    for command in (("list",), ("db", "current")):
        other = _pinbench(tmp_path / "home", wrong, *command)
        assert other.returncode == 3 and "Traceback" not in other.stderr, other.stderr
        assert "password authentication failed" in " ".join(other.stderr.split())
    right = _pinbench(tmp_path / "home", guarded, "init")
    assert right.returncode == 0, right.stderr


@pytest.mark.parametrize("command", [("db", "upgrade"), ("db", "check")])
def test_the_schema_commands_with_a_wrong_password_print_one_line(
    guarded: str, tmp_path: Path, command: tuple[str, ...]
) -> None:
    wrong = guarded.replace("pinbench:right@", f"pinbench:{WRONG}@")
    result = _pinbench(tmp_path / "home", wrong, *command)
    message = " ".join(result.stderr.split())
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr and WRONG not in result.stderr
    assert 'password authentication failed for user "pinbench"' in message


@pytest.fixture(scope="module")
def limited(guarded: str) -> Iterator[tuple[str, str]]:
    """A role whose password holds ``@`` and ``:``, and a database it does not own: what an
    operator makes by following a PostgreSQL 14 guide on PostgreSQL 15 or later (the
    ``public`` schema is the owner's only). (URL with the password encoded, the bare one.)"""
    from sqlalchemy import create_engine, text

    engine = create_engine(guarded, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("CREATE ROLE bench LOGIN PASSWORD 'p@ss:word'"))
        conn.execute(text("CREATE DATABASE notowned"))
        conn.execute(text("CREATE DATABASE owned OWNER bench"))
    engine.dispose()
    host = guarded.rsplit("@", 1)[1].rsplit("/", 1)[0]
    yield (
        f"postgresql+psycopg://bench:p%40ss%3Aword@{host}",
        f"postgresql+psycopg://bench:p@ss:word@{host}",
    )


def test_a_role_without_the_create_privilege_is_named_with_the_grant(
    limited: tuple[str, str], tmp_path: Path
) -> None:
    encoded, _ = limited
    home = tmp_path / "home"
    result = _pinbench(home, f"{encoded}/notowned", "init")
    message = " ".join(result.stderr.split())
    assert result.returncode == 3, result.stderr  # was a 114-line traceback, exit 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 4, result.stderr
    assert message.startswith("error: the database role 'bench' lacks a privilege on")
    assert "permission denied for schema public" in message
    assert "GRANT CREATE ON SCHEMA public TO bench" in message
    assert "p@ss" not in message and "word" not in message
    assert not home.exists()  # nothing left half made
    made = _pinbench(home, f"{encoded}/owned", "init")  # the database's owner may
    assert made.returncode == 0, made.stderr
    assert _pinbench(home, f"{encoded}/owned", "db", "check").returncode == 0


def test_a_password_with_a_bare_at_sign_says_to_percent_encode_it(
    limited: tuple[str, str], tmp_path: Path
) -> None:
    _, bare = limited
    result = _pinbench(tmp_path / "home", f"{bare}/owned", "init")
    message = " ".join(result.stderr.split())
    assert result.returncode == 1, result.stderr  # the URL is wrong: a user error
    assert "Traceback" not in result.stderr
    assert "must be percent-encoded in PINBENCH_DATABASE_URL (@ as %40" in message
    assert not (tmp_path / "home").exists()
