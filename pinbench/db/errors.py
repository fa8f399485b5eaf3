"""The database's errors as pinbench's own, importable without SQLAlchemy."""

from __future__ import annotations

from pinbench.errors import SystemFailure, UserError


class Conflict(UserError):
    """A write collided with existing data (a unique key), e.g. a concurrent publish."""


class DatabaseUnavailable(SystemFailure):
    pass


class DriverMissing(UserError):
    """``PINBENCH_DATABASE_URL`` names a database whose Python driver is not installed."""

    def __init__(self, *, url: str, module: str, install: str) -> None:
        super().__init__(
            f"the database URL {url} needs the Python module {module!r}, which is not "
            f"installed: {install}"
        )
        self.url = url
        self.module = module
        self.install = install


class BadDatabaseUrl(UserError):
    """``PINBENCH_DATABASE_URL`` is not a URL of a database SQLAlchemy knows."""

    def __init__(self, *, url: str, reason: str) -> None:
        super().__init__(f"the database URL {url} cannot be used: {reason}")
        self.url = url
        self.reason = reason


class PrivilegeMissing(SystemFailure):
    """The database's role may not do what pinbench asked (PostgreSQL's SQLSTATE 42501), e.g.
    create its tables where PostgreSQL 15 and later let only the database's owner."""

    def __init__(self, *, url: str, role: str, reason: str) -> None:
        super().__init__(
            f"the database role {role!r} lacks a privilege on {url}: {reason}; make it the "
            f"database's owner (`ALTER DATABASE ... OWNER TO {role}`, or `CREATE DATABASE "
            f"... OWNER {role}`), or `GRANT CREATE ON SCHEMA public TO {role}` "
            "(PostgreSQL 15 and later grant it to the owner only)"
        )
        self.url = url
        self.role = role
        self.reason = reason


def from_the_database(exc: BaseException) -> bool:
    """``exc`` is the database's: ``DatabaseUnavailable``, or an error of SQLAlchemy or of
    SQLite's driver (told apart without importing either: a library not loaded raised
    nothing)."""
    import sys

    if isinstance(exc, DatabaseUnavailable):
        return True
    for module, name in (("sqlalchemy.exc", "SQLAlchemyError"), ("sqlite3", "Error")):
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, getattr(loaded, name)):
            return True
    return False
