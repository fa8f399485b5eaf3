"""``pinbench user`` and ``pinbench token``: users, namespace members and API tokens
(``pinbench.accounts``, imported when a command runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.common import listed, local_user, remote_or_here, workspace
from pinbench.console import err as _err
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

user_app = click.Group(
    "user",
    help="Users and namespace members of this server's database (for admins; run where the "
    "server's PINBENCH_HOME / PINBENCH_DATABASE_URL are).",
    no_args_is_help=True,
)
token_app = click.Group(
    "token",
    help="API tokens: create (shown once), list, revoke. With PINBENCH_URL: through the "
    "server, for the caller's own user; without: in this database, for --user.",
    no_args_is_help=True,
)


@user_app.command("add")
@click.argument("name", type=str, help="The user's name (lowercase).")
@click.option(
    "--admin", "admin", is_flag=True, default=False, help="May manage users and namespaces."
)
@click.option(
    "--namespace",
    "-n",
    "namespace",
    type=str,
    multiple=True,
    callback=listed,
    help="Namespaces to publish in.",
)
def user_add(
    name: str,
    admin: bool = False,
    namespace: list[str] | None = None,
) -> None:
    """Add a user, optionally a member of namespaces."""
    from pinbench import accounts

    with workspace() as ws, ws.transaction() as session:
        accounts.add_user(session, name, admin=admin)
        for ns in namespace or []:
            accounts.grant(session, name, ns)
    _out().print(f"added user {name}" + (" (admin)" if admin else ""))


@user_app.command("grant")
@click.argument("name", type=str, help="The user.")
@click.argument("namespace", type=str, help="The namespace they may publish in.")
def user_grant(
    name: str,
    namespace: str,
) -> None:
    """Make a user a member of a namespace."""
    from pinbench import accounts

    with workspace() as ws, ws.transaction() as session:
        accounts.grant(session, name, namespace)
    _out().print(f"{name} may publish in {namespace}")


@user_app.command("list")
@json_option
def user_list(
    as_json: bool = False,
) -> None:
    """Users, whether admin, and their namespaces."""
    from rich.table import Table

    from pinbench import accounts

    with workspace() as ws, ws.transaction() as session:
        rows = accounts.list_users(session)
    if as_json:
        _print_json(rows)
        return
    table = Table("user", "admin", "namespaces", box=None)
    for r in rows:
        table.add_row(r["name"], "yes" if r["admin"] else "", ", ".join(r["namespaces"]))
    _out().print(table if rows else "no users")


SCOPES_HELP = (
    "Scopes: read, publish, run, admin (repeat the option). Default: read, publish, run; "
    "with PINBENCH_URL: the scopes of PINBENCH_TOKEN, which a new token never exceeds."
)


@token_app.command("create")
@click.option("--name", "name", type=str, default="cli", help="What the token is for.")
@click.option("--user", "user", type=str, help="Whose token (local database only).")
@click.option(
    "--scope",
    "scope",
    type=str,
    multiple=True,
    callback=listed,
    help=(
        "Scopes: read, publish, run, admin (repeat the option). "
        "Default: read, publish, run; with PINBENCH_URL: the scopes "
        "of PINBENCH_TOKEN, which a new token never exceeds."
    ),
)
@json_option
def token_create(
    name: str = "cli",
    user: str | None = None,
    scope: list[str] | None = None,
    as_json: bool = False,
) -> None:
    """Create an API token and print it; it is shown only this once."""
    from pinbench import accounts

    scopes = scope or list(accounts.DEFAULT_SCOPES)

    def here(ws: Workspace) -> dict[str, Any]:
        owner = local_user(user)
        with ws.transaction() as session:
            row, text = accounts.create_token(session, owner, name=name, scopes=scopes)
            return {"id": row.id, "token": text, "user": owner, "scopes": list(row.scopes)}

    body = {"name": name, "scopes": scope} if scope else {"name": name}
    info = remote_or_here(lambda remote: remote.json("POST", "/api/v1/tokens", json=body), here)
    if as_json:
        _print_json(info)
        return
    _out().print(info["token"])
    _err().print(
        f"token {info['id']} for {info['user']} ({', '.join(info['scopes'])}): "
        "store it now, it cannot be shown again"
    )


@token_app.command("list")
@click.option("--user", "user", type=str, help="Whose tokens (local database only).")
@json_option
def token_list(
    user: str | None = None,
    as_json: bool = False,
) -> None:
    """A user's tokens: id, name, scopes, revoked (never the secrets)."""
    from rich.table import Table

    from pinbench import accounts

    def here(ws: Workspace) -> list[dict[str, Any]]:
        with ws.transaction() as session:
            return accounts.list_tokens(session, local_user(user))

    rows = remote_or_here(lambda remote: remote.json("GET", "/api/v1/tokens"), here)
    if as_json:
        _print_json(rows)
        return
    table = Table("id", "name", "scopes", "created", "", box=None)
    for t in rows:
        table.add_row(
            t["id"],
            t["name"],
            ", ".join(t["scopes"]),
            t["created_at"][:16],
            "revoked" if t["revoked"] else "",
        )
    _out().print(table if rows else "no tokens")


@token_app.command("revoke")
@click.argument("token_id", type=str, help="The token's id (pbt_<ID>_...).")
def token_revoke(
    token_id: str,
) -> None:
    """Revoke a token: requests with it are refused from now on."""
    from pinbench import accounts

    def here(ws: Workspace) -> None:
        with ws.transaction() as session:
            accounts.revoke_token(session, token_id)

    remote_or_here(lambda remote: remote.call("DELETE", f"/api/v1/tokens/{token_id}"), here)
    _out().print(f"revoked token {token_id}")
