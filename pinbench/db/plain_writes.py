"""Plain SQL writes: one transaction of statements (``:name`` parameters, plain tuples back,
``RETURNING`` included) over SQLite's own driver or a SQLAlchemy connection, as
``pinbench.db.plain`` reads. A working command that writes a row or two (``lock`` records its
lockfile) on the embedded SQLite database then never imports SQLAlchemy (issue 75, item 3).

SQLite is opened as the engine opens it (``db.engine``: WAL, the busy timeout, foreign keys,
``synchronous=NORMAL``) and the transaction takes the write lock when it begins (``BEGIN
IMMEDIATE``): its reads and its writes see one state, and a writer that committed in between
cannot make its commit fail. A key that collides is ``Conflict``; any other error of the
database ``DatabaseUnavailable`` (with the disk's free space where that is the cause), as
``engine.transaction`` says them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.db.errors import Conflict, DatabaseUnavailable
from pinbench.db.plain import SQLITE_BUSY_TIMEOUT_MS, Rows, sqlite_open, sqlite_params

if TYPE_CHECKING:
    from sqlalchemy import Engine

PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
)
"""What ``db.engine`` sets on every SQLite connection it makes."""


@contextmanager
def sqlite_writes(path: Path) -> Iterator[Rows]:
    """One write transaction on an existing SQLite file at the current schema
    (``plain.sqlite_open``), committed when the block succeeds and rolled back otherwise."""
    import sqlite3

    from pinbench.db.fullness import with_free_space

    conn = sqlite_open(path, (*PRAGMAS, "BEGIN IMMEDIATE"))
    try:

        def rows(sql: str, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
            return conn.execute(sql, sqlite_params(params)).fetchall()

        try:
            yield rows
            conn.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"conflicting write: {exc}") from exc
        except sqlite3.OperationalError as exc:
            reason = with_free_space(str(exc), path)
            raise DatabaseUnavailable(f"database error: {reason}") from exc
    finally:
        conn.close()  # a transaction not committed is rolled back with the connection


@contextmanager
def engine_writes(engine: Engine) -> Iterator[Rows]:
    """One write transaction through a SQLAlchemy Core connection (no ORM)."""
    from sqlalchemy.exc import IntegrityError, OperationalError

    from pinbench.db.plain import connection_rows

    try:
        with engine.begin() as conn:
            yield connection_rows(conn)
    except IntegrityError as exc:
        raise Conflict(f"conflicting write: {exc.orig}") from exc
    except OperationalError as exc:
        raise DatabaseUnavailable(f"database error: {exc.orig}") from exc
