"""Schema migrations through Alembic, configured in code (no alembic.ini to find).

Imported only by the commands that migrate or compare the schema: Alembic (with Mako) costs
a tenth of a second to import, which every other command saves. The check that a database is
current lives in ``pinbench.db.schema`` and needs no Alembic.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from pinbench.db import schema
from pinbench.db.models import Base


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(files("pinbench") / "migrations"))
    return cfg


def heads() -> list[str]:
    return list(ScriptDirectory.from_config(_config()).get_heads())


def revisions() -> list[str]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(_config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def downgrade(engine: Engine, revision: str) -> None:
    cfg = _config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate to ``revision``; a database a newer pinbench upgraded is refused first
    (``SchemaTooNew``), not left to Alembic's "Can't locate revision"."""
    schema.refuse_unknown(schema.current_revision(engine))
    cfg = _config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def schema_diff(engine: Engine) -> list[Any]:
    """Differences between the models and the database (empty when they agree)."""
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, Base.metadata))
