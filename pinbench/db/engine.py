"""The engine and the one transaction boundary.

SQLite (the embedded default) runs in WAL mode with a busy timeout and foreign keys on.
``transaction`` commits or rolls back in one place and maps database errors to pinbench's own.
A database that cannot be reached is said in one place too, whatever first uses the engine
(``init``'s migration, a transaction, a read): a URL whose driver is not installed when the
engine is made (``DriverMissing``, with the ``pip install`` that fixes it), a connection that
fails (server down, wrong password, no such database or file) when it is first made
(``DatabaseUnavailable`` naming the database, its password hidden, and the server's reason),
a statement the role has no privilege for (``PrivilegeMissing``, naming the grant that fixes
it), and a password whose ``@`` was not percent-encoded before anything is tried.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError

from pinbench.db.errors import (
    BadDatabaseUrl,
    Conflict,
    DatabaseUnavailable,
    DriverMissing,
    PrivilegeMissing,
)
from pinbench.db.plain import SQLITE_BUSY_TIMEOUT_MS

if TYPE_CHECKING:
    from sqlalchemy.engine import ExceptionContext
    from sqlalchemy.orm import Session, sessionmaker

DRIVERS = {
    "psycopg": "pip install 'pinbench[postgres]'",
    "psycopg2": "pip install 'pinbench[postgres]' and write the URL as postgresql+psycopg://...",
}
"""What installs the driver a URL needs (the project's extra), by the module it imports."""


INSUFFICIENT_PRIVILEGE = "42501"
"""PostgreSQL's SQLSTATE for a statement the role may not run."""


def make_engine(url: str) -> Engine:
    shown = _shown(url)
    _refuse_unencoded(url, shown)
    try:
        if url.startswith("sqlite"):
            timeout = SQLITE_BUSY_TIMEOUT_MS / 1000
            engine = create_engine(url, connect_args={"timeout": timeout})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except ImportError as exc:  # SQLAlchemy imports the URL's driver here
        module = (exc.name or "").split(".")[0] or "its driver"
        install = DRIVERS.get(module, f"pip install {module}")
        raise DriverMissing(url=shown, module=module, install=install) from None
    except ArgumentError as exc:  # not a URL, or a dialect SQLAlchemy does not have
        raise BadDatabaseUrl(url=shown, reason=str(exc)) from None
    event.listen(engine, "handle_error", _unreachable)
    return engine


ENCODE = (
    "a password containing @, :, / or % must be percent-encoded in PINBENCH_DATABASE_URL "
    "(@ as %40, : as %3A, / as %2F, % as %25)"
)


def _refuse_unencoded(url: str, shown: str) -> None:
    """A password with a bare ``@`` makes the rest of it part of the host (or a port that
    does not parse): said as such, before anything is tried."""
    authority = url.partition("://")[2].partition("/")[0]
    if authority.count("@") < 2:
        return
    try:
        host = make_url(url).host or ""
    except (ArgumentError, ValueError):
        host = "@"
    if "@" in host:
        raise BadDatabaseUrl(url=shown, reason=f"its host part contains '@': {ENCODE}")


def _shown(url: str) -> str:
    """The URL as it may be printed: its password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return url.partition("://")[0] + "://(not shown: it does not parse)"


def _unreachable(context: ExceptionContext) -> None:
    """A connection that could not be made: raised as ``DatabaseUnavailable`` in place of
    SQLAlchemy's error (and its traceback through the driver). A pre-ping's failure is left
    to the pool, which reconnects; errors on a connection that was made are left to
    ``transaction``, but for a missing privilege (``PrivilegeMissing``, wherever it comes:
    ``init``'s migration runs outside ``transaction``)."""
    if context.engine is None:
        return
    original = context.original_exception
    if getattr(original, "sqlstate", None) == INSUFFICIENT_PRIVILEGE:
        parsed = context.engine.url
        raise PrivilegeMissing(
            url=parsed.render_as_string(hide_password=True),
            role=str(parsed.username),
            reason=str(original).splitlines()[0],
        )
    if context.connection is not None or context.is_pre_ping:
        return
    from pinbench.db.fullness import with_free_space
    from pinbench.db.plain import sqlite_file

    reason = " ".join(str(context.original_exception).split())
    reason = with_free_space(reason, sqlite_file(str(context.engine.url)))
    url = context.engine.url.render_as_string(hide_password=True)
    raise DatabaseUnavailable(f"cannot connect to the database {url}: {reason}")


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """Yield a session; commit if the block succeeds, roll back otherwise."""
    session = factory()
    try:
        yield session
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise Conflict(f"conflicting write: {exc.orig}") from exc
    except OperationalError as exc:
        session.rollback()
        raise DatabaseUnavailable(f"database error: {exc.orig}") from exc
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
