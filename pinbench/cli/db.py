"""``pinbench init`` and ``pinbench db``: the home and the database's schema.

Alembic is imported only by the commands that migrate or compare (``_migrate``), SQLAlchemy only
when a command opens the workspace.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

import click

from pinbench.cli.common import workspace
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

db_app = click.Group(
    "db",
    help="Database schema migrations.",
    no_args_is_help=True,
)


@click.command("init")
@json_option
def init(
    as_json: bool = False,
) -> None:
    """Create PINBENCH_HOME: the blob store, a database migrated to the current schema, and
    this registry's signing keys: Ed25519 for run attestations, EC P-256 for model signatures
    (`pinbench keys list`). On a home that has keys, they are checked, never replaced."""
    from pinbench.provenance.key_material import ATTESTATION, MODEL_SIGNING
    from pinbench.provenance.keys import ensure_keys

    with workspace() as ws:
        revision = ws.init()
        keys = ensure_keys(ws)
        keyid = keys[ATTESTATION]
        info = {
            "home": str(ws.settings.home),
            "database": _safe_url(ws),
            "revision": revision,
            "signing_key": keyid,
            "model_signing_key": keys[MODEL_SIGNING],
        }
    if as_json:
        _print_json(info)
    else:
        _out().print(f"initialised {info['home']} (database {info['database']}, schema {revision})")
        _out().print(f"signing key {keyid[:16]} signs this registry's run attestations")
        _out().print(f"model-signing key {keys[MODEL_SIGNING][:16]} signs its models")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema revision."""
    from pinbench.db import schema as db_schema

    with workspace() as ws:
        ws.settings.home.mkdir(parents=True, exist_ok=True)
        before = db_schema.current_revision(ws.engine)
        _migrate().upgrade(ws.engine)
        after = db_schema.current_revision(ws.engine)
    _out().print(f"database schema: {before or 'empty'} -> {after}")


@db_app.command("current")
@json_option
def db_current(
    as_json: bool = False,
) -> None:
    """Print the database's schema revision and the one this pinbench needs."""
    from pinbench.db import schema as db_schema

    with workspace() as ws:
        info = {"current": db_schema.current_revision(ws.engine), "head": db_schema.HEAD_REVISION}
    if as_json:
        _print_json(info)
    else:
        _out().print(f"current: {info['current'] or 'none'}  head: {info['head']}")


@db_app.command("check")
def db_check() -> None:
    """Exit 0 if the database is at the head revision and matches the models, else 1."""
    from pinbench.db import schema as db_schema

    with workspace() as ws:
        db_schema.ensure_current(ws.engine)
        diff = _migrate().schema_diff(ws.engine)
    if diff:
        raise UserError(f"the database schema differs from the models: {diff}")
    _out().print("database schema is current")


def _migrate() -> ModuleType:
    """Alembic is imported only by the commands that need it (a tenth of a second saved)."""
    return importlib.import_module("pinbench.db.migrate")


def _safe_url(ws: Workspace) -> str:
    from sqlalchemy.engine import make_url

    return make_url(ws.settings.database_url).render_as_string(hide_password=True)
