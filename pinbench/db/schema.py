"""Is the database at the schema this code needs? Answered with one query, without Alembic.

A database that is not at ``HEAD_REVISION`` is refused with an error naming the command that
fixes it. ``tests/test_schema.py`` checks that ``HEAD_REVISION`` is Alembic's single head.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.db.errors import DatabaseUnavailable
from pinbench.errors import UserError

if TYPE_CHECKING:
    from sqlalchemy import Engine

HEAD_REVISION = "0011"
VERSION_TABLE = "alembic_version"


class SchemaNotCurrent(UserError):
    def __init__(self, *, current: str | None, head: str) -> None:
        if current is None:
            msg = (
                "the database has no pinbench schema: run `pinbench init` or `pinbench db upgrade`"
            )
        else:
            msg = (
                f"the database schema is at revision {current}, this pinbench needs {head}: "
                "run `pinbench db upgrade`"
            )
        super().__init__(msg)
        self.current = current
        self.head = head


def current_revision(engine: Engine) -> str | None:
    """The revision recorded in the database, or None for a database without the schema."""
    from sqlalchemy import inspect, text

    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def ensure_current(engine: Engine) -> None:
    """Raise ``SchemaNotCurrent`` unless the database is at the head revision."""
    from sqlalchemy.exc import OperationalError

    url = engine.url
    on_disk = url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
    if on_disk and not Path(str(url.database)).exists():
        raise SchemaNotCurrent(current=None, head=HEAD_REVISION)
    try:
        current = current_revision(engine)
    except OperationalError as exc:
        raise DatabaseUnavailable(
            f"cannot open database {url.render_as_string(hide_password=True)}: {exc.orig}"
        ) from exc
    if current != HEAD_REVISION:
        raise SchemaNotCurrent(current=current, head=HEAD_REVISION)
