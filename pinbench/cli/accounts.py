"""``pinbench user`` and ``pinbench token``: users, namespace members and API tokens
(``Registry.accounts()``, imported when a command runs)."""

from __future__ import annotations

import click

from pinbench.cli.common import listed, local_registry, registry
from pinbench.console import err as _err
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

user_app = click.Group(
    "user",
    help="Users and namespace members of this server's database, for admins.\n\n"
    "Run where the server's PINBENCH_HOME / PINBENCH_DATABASE_URL are.",
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
    with local_registry() as reg:
        reg.accounts().add_user(name, admin=admin, namespaces=namespace or [])
    _out().print(f"added user {name}" + (" (admin)" if admin else ""))


@user_app.command("grant")
@click.argument("name", type=str, help="The user.")
@click.argument("namespace", type=str, help="The namespace they may publish in.")
def user_grant(
    name: str,
    namespace: str,
) -> None:
    """Make a user a member of a namespace."""
    with local_registry() as reg:
        reg.accounts().grant(name, namespace)
    _out().print(f"{name} may publish in {namespace}")


@user_app.command("revoke")
@click.argument("name", type=str, help="The user.")
@click.argument("namespace", type=str, help="The namespace they may no longer publish in.")
def user_revoke(
    name: str,
    namespace: str,
) -> None:
    """Remove a user from a namespace (what they published there stays)."""
    with local_registry() as reg:
        reg.accounts().revoke_membership(name, namespace)
    _out().print(f"{name} may no longer publish in {namespace}")


@user_app.command("disable")
@click.argument("name", type=str, help="The user.")
def user_disable(
    name: str,
) -> None:
    """Refuse every token of a user from now on (each request checks), until enabled."""
    with local_registry() as reg:
        before = reg.accounts().disable_user(name)
    _out().print(f"{name} was already disabled" if before == "disabled" else f"disabled {name}")


@user_app.command("enable")
@click.argument("name", type=str, help="The user.")
def user_enable(
    name: str,
) -> None:
    """Let a disabled user's tokens (those not revoked) work again."""
    with local_registry() as reg:
        before = reg.accounts().enable_user(name)
    _out().print(f"{name} was not disabled" if before == "active" else f"enabled {name}")


@user_app.command("delete")
@click.argument("name", type=str, help="The user.")
def user_delete(
    name: str,
) -> None:
    """Delete a user: revoke their tokens, remove their namespaces.

    What they published and ran stays, attributed to their name, which is not given again.
    The last admin is kept."""
    with local_registry() as reg:
        revoked = reg.accounts().delete_user(name)
    _out().print(f"deleted {name} ({revoked} token(s) revoked)")


@user_app.command("list")
@json_option
def user_list(
    as_json: bool = False,
) -> None:
    """Users, whether admin, and their namespaces."""
    from rich.table import Table

    with local_registry() as reg:
        rows = reg.accounts().users()
    if as_json:
        _print_json(rows)
        return
    marked = any(r["status"] != "active" for r in rows)  # disabled or deleted: a 4th column
    table = Table("user", "admin", "namespaces", *([""] if marked else []), box=None)
    for r in rows:
        status = [] if not marked else ["" if r["status"] == "active" else r["status"]]
        table.add_row(r["name"], "yes" if r["admin"] else "", ", ".join(r["namespaces"]), *status)
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
    with registry() as reg:
        info = reg.accounts().create_token(name=name, scopes=scope, user=user)
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

    with registry() as reg:
        rows = reg.accounts().tokens(user=user)
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
    with registry() as reg:
        reg.accounts().revoke_token(token_id)
    _out().print(f"revoked token {token_id}")
