"""The engine and the one transaction boundary.

SQLite (the embedded default) runs in WAL mode with a busy timeout and foreign keys on.
``transaction`` commits or rolls back in one place and maps database errors to pinbench's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import IntegrityError, OperationalError

from pinbench.db.errors import Conflict, DatabaseUnavailable
from pinbench.db.plain import SQLITE_BUSY_TIMEOUT_MS

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


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
