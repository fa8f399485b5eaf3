"""Is the database at the schema this code needs? Answered with one query, without Alembic.

A database that is not at ``HEAD_REVISION`` is refused with an error naming the command that
fixes it: ``pinbench db upgrade`` when it is behind, a newer pinbench when a newer pinbench
upgraded it past every revision this code knows (``SchemaTooNew``; an upgrade cannot go
back). ``tests/test_schema.py`` checks that ``HEAD_REVISION`` is Alembic's single head and that
``known_revisions`` are Alembic's revisions.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.db.errors import DatabaseUnavailable
from pinbench.errors import UserError

if TYPE_CHECKING:
    from sqlalchemy import Engine

HEAD_REVISION = "0018"
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


class SchemaTooNew(UserError):
    """The database is at a revision this pinbench's migrations do not define: a newer
    pinbench upgraded it. Neither this code nor its ``db upgrade`` can use it."""

    def __init__(self, *, current: str, head: str, version: str) -> None:
        super().__init__(
            f"the database schema is at revision {current}, which this pinbench ({version}, "
            f"schema {head}) does not know: a newer pinbench upgraded it; use that pinbench "
            "or a newer one with this database (`pinbench db upgrade` cannot take a schema "
            "back)"
        )
        self.current = current
        self.head = head
        self.version = version


_REVISION_FILE = re.compile(r"([0-9]{4})_[a-z0-9_]+\.py")


@cache
def known_revisions() -> frozenset[str]:
    """Every revision this pinbench's migrations define, read from their files' names
    (``NNNN_what.py``) without importing Alembic."""
    from importlib.resources import files

    versions = files("pinbench") / "migrations" / "versions"
    found = (_REVISION_FILE.fullmatch(entry.name) for entry in versions.iterdir())
    return frozenset(m.group(1) for m in found if m)


def pinbench_version() -> str:
    """This pinbench's version as installed, for messages."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pinbench")
    except PackageNotFoundError:
        return "version unknown"


def refuse_unknown(current: str | None) -> None:
    """Raise ``SchemaTooNew`` when ``current`` is a revision this code does not define (the head
    is one it defines: the migrations' files are listed only for another revision)."""
    if current is not None and current != HEAD_REVISION and current not in known_revisions():
        raise SchemaTooNew(current=current, head=HEAD_REVISION, version=pinbench_version())


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
        from pinbench.db.fullness import with_free_space
        from pinbench.db.sqlite_url import sqlite_file

        reason = with_free_space(str(exc.orig), sqlite_file(str(url)))
        raise DatabaseUnavailable(
            f"cannot open database {url.render_as_string(hide_password=True)}: {reason}"
        ) from exc
    refuse_unknown(current)
    if current != HEAD_REVISION:
        raise SchemaNotCurrent(current=current, head=HEAD_REVISION)
