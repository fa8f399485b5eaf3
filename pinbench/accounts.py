"""Users and namespaces: who may read, publish, run and administer (the rows read and written
with plain SQL: ``Rows``, from ``Workspace.reads``/``writes`` or a caller's session).

API tokens are made, listed, revoked and checked by ``pinbench.api_tokens``. Scopes: ``read``,
``publish`` (in the namespaces the user belongs to), ``run`` (lock and run) and ``admin``
(users and namespaces; only for admin users). A new token has only scopes its creator's token
was *issued* with: the ``read`` a public server lends every caller is not the token's own, so
it cannot be minted into a token that reads a ``--private`` server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.registry.names import namespace_of

if TYPE_CHECKING:
    from pinbench.db.plain import Rows

SCOPES = ("read", "publish", "run", "admin")
DEFAULT_SCOPES = ("read", "publish", "run")
_USER = re.compile(r"[a-z][a-z0-9._-]{0,99}")
_NAMESPACE = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")


class AuthError(UserError):
    """No valid credentials (HTTP 401)."""


class Forbidden(UserError):
    """Valid credentials without the right to do this (HTTP 403)."""


class UserDisabled(AuthError):
    """A valid token of a disabled user (said only to whoever holds the token's secret)."""

    def __init__(self, *, user: str, token_id: str) -> None:
        super().__init__(
            f"user {user} is disabled: API token {token_id} is refused until an admin runs "
            f"`pinbench user enable {user}`"
        )
        self.user = user
        self.token_id = token_id


class UserDeleted(UserError):
    """A deleted user's name: kept (it attributes what they published and ran), never reused."""

    def __init__(self, *, user: str, action: str) -> None:
        super().__init__(
            f"user {user!r} was deleted: cannot {action} (the name stays attributed to what "
            "they published and ran, so it is not given again)"
        )
        self.user = user
        self.action = action


class LastAdmin(UserError):
    """Disabling or deleting the only enabled admin would leave nobody to manage accounts."""

    def __init__(self, *, user: str, action: str) -> None:
        super().__init__(
            f"cannot {action} {user}: it is the last enabled admin "
            f"(add another first: `pinbench user add NAME --admin`)"
        )
        self.user = user
        self.action = action


class AccountNotFound(UserError):
    def __init__(self, *, what: str) -> None:
        super().__init__(f"{what} does not exist")
        self.what = what


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling, with what scopes and namespaces; ``ANONYMOUS`` when no token."""

    user: str | None
    scopes: frozenset[str]
    namespaces: frozenset[str]
    is_admin: bool = False
    token_id: str | None = None
    granted: frozenset[str] = frozenset()
    """The scopes the token was issued with; ``scopes`` may add what this server lends every
    caller (``read`` when reads are public). Only ``granted`` may be passed on to a new token."""

    def require(self, scope: str) -> None:
        if scope in self.scopes:
            return
        if self.user is None:
            raise AuthError(f"this needs a token with the {scope!r} scope (Authorization: Bearer)")
        raise Forbidden(f"token {self.token_id} of {self.user} lacks the {scope!r} scope")

    def require_namespace(self, artifact_name: str, action: str) -> None:
        """Only a namespace's members (and admins) publish or yank in it."""
        self.require("publish")
        if self.is_admin and "admin" in self.scopes:
            return
        namespace = namespace_of(artifact_name)
        if namespace is None:
            if self.is_admin:  # the user is an admin; the token was not issued as one
                raise AdminScopeMissing(
                    user=str(self.user), token_id=self.token_id, name=artifact_name, action=action
                )
            raise Forbidden(
                f"{artifact_name!r} has no namespace: only admins {action} names without one"
            )
        if namespace not in self.namespaces:
            raise Forbidden(
                f"{self.user} is not a member of namespace {namespace!r}: "
                f"cannot {action} {artifact_name}"
            )


class AdminScopeMissing(Forbidden):
    """An admin user's token without the ``admin`` scope asked for what only that scope
    allows: the scope is missing, not the right; the message says how to get a token with it."""

    def __init__(self, *, user: str, token_id: str | None, name: str, action: str) -> None:
        super().__init__(
            f"{name!r} has no namespace: only a token with the 'admin' scope may {action} names "
            f"without one, and token {token_id} of {user} (an admin) was created without it; "
            f"create one with `pinbench token create --user {user} --scope read "
            "--scope publish --scope run --scope admin` on the server's database"
        )
        self.user = user
        self.token_id = token_id
        self.name = name
        self.action = action


ANONYMOUS = Principal(user=None, scopes=frozenset(), namespaces=frozenset())
PUBLIC_READER = Principal(user=None, scopes=frozenset({"read"}), namespaces=frozenset())


def check_scopes(scopes: list[str]) -> list[str]:
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise UserError(
            f"invalid scopes {', '.join(unknown) or '(none)'}: choose from {', '.join(SCOPES)}"
        )
    return [s for s in SCOPES if s in scopes]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class UserRow:
    """A row of ``users`` (``USER_COLUMNS``)."""

    id: int
    name: str
    is_admin: bool
    disabled_at: datetime | None
    deleted_at: datetime | None


USER_COLUMNS = "id, name, is_admin, disabled_at, deleted_at"


def user_row(row: Sequence[Any]) -> UserRow:
    from pinbench.db.plain import when_or_none

    id_, name, admin, disabled, deleted = row
    return UserRow(int(id_), str(name), bool(admin), when_or_none(disabled), when_or_none(deleted))


def get_user(rows: Rows, name: str) -> UserRow:
    found = rows(f"SELECT {USER_COLUMNS} FROM users WHERE name = :name", {"name": name})
    if not found:
        raise AccountNotFound(what=f"user {name!r}")
    return user_row(found[0])


def live_user(rows: Rows, name: str, action: str) -> UserRow:
    """The user ``name``, who must not have been deleted (UserDeleted naming ``action``)."""
    user = get_user(rows, name)
    if user.deleted_at is not None:
        raise UserDeleted(user=name, action=action)
    return user


def add_user(rows: Rows, name: str, *, admin: bool = False) -> int:
    """Add the user ``name``; its id."""
    if not _USER.fullmatch(name):
        raise UserError(
            f"invalid user name {name!r}: lowercase letter first, then letters, digits, . _ -"
        )
    try:
        existing = get_user(rows, name)
    except AccountNotFound:
        ((user_id,),) = rows(
            "INSERT INTO users (name, is_admin, created_at) VALUES (:name, :admin, :now) "
            "RETURNING id",
            {"name": name, "admin": admin, "now": utc_now()},
        )
        return int(user_id)
    if existing.deleted_at is not None:
        raise UserDeleted(user=name, action="add it again")
    raise UserError(f"user {name!r} already exists")


def grant(rows: Rows, user_name: str, namespace: str) -> None:
    """Make a user a member of a namespace (created by its first member)."""
    if not _NAMESPACE.fullmatch(namespace):
        raise UserError(f"invalid namespace {namespace!r}: letters, digits, . _ - (lowercase)")
    user = live_user(rows, user_name, f"grant it namespace {namespace!r}")
    rows(
        "INSERT INTO namespace_members (namespace, user_id) VALUES (:namespace, :user) "
        "ON CONFLICT (namespace, user_id) DO NOTHING",
        {"namespace": namespace, "user": user.id},
    )


def revoke_membership(rows: Rows, user_name: str, namespace: str) -> None:
    user = get_user(rows, user_name)
    gone = rows(
        "DELETE FROM namespace_members WHERE namespace = :namespace AND user_id = :user "
        "RETURNING user_id",
        {"namespace": namespace, "user": user.id},
    )
    if not gone:
        raise AccountNotFound(what=f"membership of {user_name!r} in {namespace!r}")


def namespaces_of(rows: Rows, user: UserRow) -> list[str]:
    found = rows("SELECT namespace FROM namespace_members WHERE user_id = :user", {"user": user.id})
    return sorted(str(n) for (n,) in found)


def status_of(user: UserRow) -> str:
    """``active``, ``disabled`` or ``deleted``."""
    if user.deleted_at is not None:
        return "deleted"
    return "disabled" if user.disabled_at is not None else "active"


def user_info(rows: Rows, user: UserRow) -> dict[str, Any]:
    """A user as ``user list`` shows one."""
    return {
        "name": user.name,
        "admin": user.is_admin,
        "namespaces": namespaces_of(rows, user),
        "status": status_of(user),
    }


def list_users(rows: Rows) -> list[dict[str, Any]]:
    found = rows(f"SELECT {USER_COLUMNS} FROM users ORDER BY name", {})
    return [user_info(rows, user_row(r)) for r in found]
