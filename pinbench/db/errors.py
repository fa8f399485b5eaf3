"""The database's errors as pinbench's own, importable without SQLAlchemy."""

from __future__ import annotations

from pinbench.errors import SystemFailure, UserError


class Conflict(UserError):
    """A write collided with existing data (a unique key), e.g. a concurrent publish."""


class DatabaseUnavailable(SystemFailure):
    pass
