"""Plain SQL reads: the same statement text over SQLite's own driver or a SQLAlchemy connection.

A read command (``pinbench list``, ``show``, ``resolve``) on the embedded SQLite database opens
the file with the standard library's ``sqlite3`` and never imports SQLAlchemy, whose import
alone costs more CPU than the command's whole budget. Every other database, and a process that
already holds an engine (the server), reads through SQLAlchemy Core. Statements use ``:name``
parameters, which ``sqlite3`` and SQLAlchemy's ``text`` both accept, and return plain tuples;
the caller normalises values with ``flag``, ``when`` and ``json_value`` (SQLite hands back
booleans as integers and timestamps and JSON as text, PostgreSQL as Python values).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.db.errors import DatabaseUnavailable
from pinbench.db.schema import HEAD_REVISION, VERSION_TABLE, SchemaNotCurrent, refuse_unknown
from pinbench.db.sqlite_url import sqlite_file as sqlite_file

if TYPE_CHECKING:
    import sqlite3

    from sqlalchemy import Connection, Engine
    from sqlalchemy.orm import Session

Rows = Callable[[str, Mapping[str, Any]], Sequence[Sequence[Any]]]
"""Run one SELECT with named parameters; every row as a tuple."""

SQLITE_BUSY_TIMEOUT_MS = 30_000


def sqlite_open(path: Path, statements: Sequence[str]) -> sqlite3.Connection:
    """A connection to an existing SQLite file at the current schema, opened read-write without
    create (a missing file is refused, never created), ``statements`` run on it (its pragmas,
    its ``BEGIN``) before the schema's revision is checked; every failure said as
    ``DatabaseUnavailable`` (with the disk's free space where that is the cause)."""
    import sqlite3

    if not path.is_file():
        raise SchemaNotCurrent(current=None, head=HEAD_REVISION)
    from pinbench.db.fullness import with_free_space

    where = f"cannot open database {path}"
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=rw",
            uri=True,
            timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
        )
    except sqlite3.Error as exc:
        raise DatabaseUnavailable(f"{where}: {with_free_space(str(exc), path)}") from exc
    try:
        for statement in statements:
            conn.execute(statement)
        _check_revision(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise DatabaseUnavailable(f"{where}: {with_free_space(str(exc), path)}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def sqlite_reads(path: Path) -> Iterator[Rows]:
    """Reads in one snapshot of an existing SQLite file at the current schema, on a query-only
    connection (``sqlite_open``)."""
    conn = sqlite_open(path, ("PRAGMA query_only=ON", "BEGIN"))
    try:
        yield sqlite_rows(conn)
    finally:
        conn.close()  # the read transaction ends with the connection


def sqlite_rows(conn: sqlite3.Connection) -> Rows:
    """Rows over an open ``sqlite3`` connection (its transaction, if one is begun); an
    operational error of the database is ``DatabaseUnavailable``."""
    import sqlite3

    def rows(sql: str, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        try:
            return conn.execute(sql, sqlite_params(params)).fetchall()
        except sqlite3.OperationalError as exc:
            raise DatabaseUnavailable(f"database error: {exc}") from exc

    return rows


def sqlite_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as SQLite compares them with what SQLAlchemy stored: a timestamp as the text
    of its UTC time (``2026-11-28 21:27:00.000000``, SQLAlchemy's SQLite format, which orders
    as the times do); every other value as it is."""
    return {k: _stamp(v) if isinstance(v, datetime) else v for k, v in params.items()}


def _stamp(moment: datetime) -> str:
    utc = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    return f"{utc:%Y-%m-%d %H:%M:%S}.{utc.microsecond:06d}"


def _check_revision(conn: sqlite3.Connection) -> None:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSION_TABLE,)
    ).fetchone()
    current = (
        conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone() if exists else None
    )
    revision = None if current is None else str(current[0])
    refuse_unknown(revision)
    if revision != HEAD_REVISION:
        raise SchemaNotCurrent(current=revision, head=HEAD_REVISION)


@contextmanager
def engine_reads(engine: Engine) -> Iterator[Rows]:
    """Reads through a SQLAlchemy Core connection (no ORM), in one transaction."""
    from sqlalchemy.exc import OperationalError

    try:
        with engine.connect() as conn:
            yield connection_rows(conn)
    except OperationalError as exc:
        raise DatabaseUnavailable(f"database error: {exc.orig}") from exc


def connection_rows(conn: Connection | Session) -> Rows:
    """Rows over a SQLAlchemy connection or session (the caller's transaction). On SQLite a
    timestamp parameter is written as ``sqlite_params`` writes it (SQLAlchemy's own text form,
    which the raw driver's adapter would not give: ``+00:00`` appended)."""
    from sqlalchemy import Connection, text
    from sqlalchemy.exc import ResourceClosedError

    bind = conn if isinstance(conn, Connection) else conn.get_bind()
    on_sqlite = bind.dialect.name == "sqlite"

    def rows(sql: str, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        values = sqlite_params(params) if on_sqlite else dict(params)
        result = conn.execute(text(sql), values)
        try:
            return [tuple(r) for r in result.all()]
        except ResourceClosedError:  # a statement that returns no rows (INSERT, no RETURNING)
            return []

    return rows


def flag(value: Any) -> bool:
    return bool(value)


def when(value: Any) -> datetime:
    """A timestamp column as an aware datetime (SQLite keeps text without a zone: UTC)."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(moment, datetime):
        raise TypeError(f"not a timestamp: {value!r}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def when_or_none(value: Any) -> datetime | None:
    """``when`` of a column that may be NULL."""
    return None if value is None else when(value)


def json_value(value: Any) -> Any:
    """A JSON column's value (SQLite keeps the text, PostgreSQL's driver decodes it)."""
    return json.loads(value) if isinstance(value, str | bytes) else value
