"""``pinbench init`` and ``pinbench db``: the home and the database's schema
(``Registry.admin()``; Alembic is imported only to migrate or compare)."""

from __future__ import annotations

import click

from pinbench.cli.common import local_registry
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

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
    """Create PINBENCH_HOME: the blob store, the database and this registry's signing keys.

    The database is migrated to the current schema. The keys are Ed25519 for run
    attestations and EC P-256 for model signatures (`pinbench keys list`). On a home that has
    keys, they are checked, never replaced."""
    with local_registry() as reg:
        info = reg.admin().init()
    revision, keyid, model_key = info["revision"], info["signing_key"], info["model_signing_key"]
    if as_json:
        _print_json(info)
    else:
        _out().print(f"initialised {info['home']} (database {info['database']}, schema {revision})")
        _out().print(f"signing key {keyid[:16]} signs this registry's run attestations")
        _out().print(f"model-signing key {model_key[:16]} signs its models")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema revision."""
    with local_registry() as reg:
        before, after = reg.admin().upgrade()
    _out().print(f"database schema: {before or 'empty'} -> {after}")


@db_app.command("current")
@json_option
def db_current(
    as_json: bool = False,
) -> None:
    """Print the database's schema revision and the one this pinbench needs."""
    with local_registry() as reg:
        info = reg.admin().revisions()
    if as_json:
        _print_json(info)
    else:
        _out().print(f"current: {info['current'] or 'none'}  head: {info['head']}")


@db_app.command("check")
def db_check() -> None:
    """Exit 0 if the database is at the head revision and matches the models, else 1."""
    with local_registry() as reg:
        reg.admin().check()
    _out().print("database schema is current")
