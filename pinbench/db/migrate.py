"""Schema migrations through Alembic, configured in code (no alembic.ini to find).

A database must be at the head revision before pinbench reads or writes it; otherwise the
caller gets an error naming the command that fixes it.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from pinbench.db.engine import DatabaseUnavailable
from pinbench.db.models import Base
from pinbench.errors import UserError


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


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(files("pinbench") / "migrations"))
    return cfg


def head_revision() -> str:
    heads = ScriptDirectory.from_config(_config()).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"migrations must have exactly one head, found {heads}")
    return heads[0]


def heads() -> list[str]:
    return list(ScriptDirectory.from_config(_config()).get_heads())


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    cfg = _config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def schema_diff(engine: Engine) -> list[Any]:
    """Differences between the models and the database (empty when they agree)."""
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, Base.metadata))


def ensure_current(engine: Engine) -> None:
    """Raise ``SchemaNotCurrent`` unless the database is at the head revision."""
    head = head_revision()
    url = engine.url
    on_disk = url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
    if on_disk and not Path(str(url.database)).exists():
        raise SchemaNotCurrent(current=None, head=head)
    try:
        current = current_revision(engine)
    except OperationalError as exc:
        raise DatabaseUnavailable(
            f"cannot open database {url.render_as_string(hide_password=True)}: {exc.orig}"
        ) from exc
    if current != head:
        raise SchemaNotCurrent(current=current, head=head)
