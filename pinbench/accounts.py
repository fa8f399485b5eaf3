"""Users, namespaces and API tokens: who may read, publish, run and administer.

A token is ``pbt_<id>_<secret>``; only the sha256 of the secret is stored, so a token is shown
once, when it is created. Scopes: ``read``, ``publish`` (in the namespaces the user belongs
to), ``run`` (lock and run) and ``admin`` (users and namespaces; only for admin users). A new
token never has a scope its creator's token was *issued* with: the ``read`` a public server lends
every caller is not the token's own, so it cannot be minted into a token that reads a
``--private`` server.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pinbench.db.models import ApiToken, NamespaceMember, User
from pinbench.errors import UserError
from pinbench.registry.names import namespace_of

SCOPES = ("read", "publish", "run", "admin")
DEFAULT_SCOPES = ("read", "publish", "run")
_TOKEN = re.compile(r"pbt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
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


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def get_user(session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        raise AccountNotFound(what=f"user {name!r}")
    return user


def live_user(session: Session, name: str, action: str) -> User:
    """The user ``name``, who must not have been deleted (UserDeleted naming ``action``)."""
    user = get_user(session, name)
    if user.deleted_at is not None:
        raise UserDeleted(user=name, action=action)
    return user


def add_user(session: Session, name: str, *, admin: bool = False) -> User:
    if not _USER.fullmatch(name):
        raise UserError(
            f"invalid user name {name!r}: lowercase letter first, then letters, digits, . _ -"
        )
    existing = session.scalar(select(User).where(User.name == name))
    if existing is not None and existing.deleted_at is not None:
        raise UserDeleted(user=name, action="add it again")
    if existing is not None:
        raise UserError(f"user {name!r} already exists")
    user = User(name=name, is_admin=admin, created_at=_now())
    session.add(user)
    session.flush()
    return user


def grant(session: Session, user_name: str, namespace: str) -> None:
    """Make a user a member of a namespace (created by its first member)."""
    if not _NAMESPACE.fullmatch(namespace):
        raise UserError(f"invalid namespace {namespace!r}: letters, digits, . _ - (lowercase)")
    user = live_user(session, user_name, f"grant it namespace {namespace!r}")
    if session.get(NamespaceMember, (namespace, user.id)) is None:
        session.add(NamespaceMember(namespace=namespace, user_id=user.id))


def revoke_membership(session: Session, user_name: str, namespace: str) -> None:
    user = get_user(session, user_name)
    row = session.get(NamespaceMember, (namespace, user.id))
    if row is None:
        raise AccountNotFound(what=f"membership of {user_name!r} in {namespace!r}")
    session.delete(row)


def namespaces_of(session: Session, user: User) -> list[str]:
    return sorted(
        session.scalars(select(NamespaceMember.namespace).where(NamespaceMember.user_id == user.id))
    )


def status_of(user: User) -> str:
    """``active``, ``disabled`` or ``deleted``."""
    if user.deleted_at is not None:
        return "deleted"
    return "disabled" if user.disabled_at is not None else "active"


def list_users(session: Session) -> list[dict[str, Any]]:
    return [
        {
            "name": u.name,
            "admin": u.is_admin,
            "namespaces": namespaces_of(session, u),
            "status": status_of(u),
        }
        for u in session.scalars(select(User).order_by(User.name))
    ]


class ScopeEscalation(Forbidden):
    """A token asked to mint a token with scopes it was not issued with itself."""

    def __init__(self, *, token_id: str | None, wider: list[str], granted: list[str]) -> None:
        super().__init__(
            f"a new token cannot have scopes token {token_id} was not issued with: "
            f"{', '.join(wider)} (it has {', '.join(granted) or 'none'})"
        )
        self.token_id = token_id
        self.wider = wider
        self.granted = granted


def create_token(
    session: Session,
    user_name: str,
    *,
    name: str,
    scopes: list[str],
    within: Principal | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; return its row and the token text (the only time it is seen).

    ``within``: the token asking (through the API); the new token's scopes must be a subset of
    the scopes that token was issued with, and it is for the same user. None: the operator,
    on the server's own database.
    """
    user = live_user(session, user_name, "create a token for it")
    scopes = check_scopes(scopes)
    if within is not None:
        if within.user != user_name:
            raise Forbidden(f"token {within.token_id} cannot create tokens for {user_name}")
        wider = [s for s in scopes if s not in within.granted]
        if wider:
            raise ScopeEscalation(
                token_id=within.token_id,
                wider=wider,
                granted=[s for s in SCOPES if s in within.granted],
            )
    if "admin" in scopes and not user.is_admin:
        raise Forbidden(f"{user_name} is not an admin: a token with the 'admin' scope is refused")
    if not name.strip() or len(name) > 100:
        raise UserError("a token needs a name of 1 to 100 characters")
    token_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    row = ApiToken(
        id=token_id,
        user_id=user.id,
        name=name,
        secret_sha256=_hash(secret),
        scopes=scopes,
        created_at=_now(),
        revoked_at=None,
    )
    session.add(row)
    return row, f"pbt_{token_id}_{secret}"


def revoke_token(session: Session, token_id: str, *, by: Principal | None = None) -> None:
    """Revoke a token; ``by`` (when given) must own it or be an admin."""
    row = session.get(ApiToken, token_id)
    if row is None:
        raise AccountNotFound(what=f"token {token_id!r}")
    is_admin = by is not None and by.is_admin and "admin" in by.scopes
    if by is not None and not is_admin and row.user.name != by.user:
        raise Forbidden(f"token {token_id} belongs to another user")
    if row.revoked_at is None:
        row.revoked_at = _now()


def list_tokens(session: Session, user_name: str) -> list[dict[str, Any]]:
    user = get_user(session, user_name)
    rows = session.scalars(
        select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.created_at)
    )
    return [
        {
            "id": t.id,
            "name": t.name,
            "scopes": list(t.scopes),
            "created_at": t.created_at.isoformat(),
            "revoked": t.revoked_at is not None,
        }
        for t in rows
    ]


def split_token(token: str) -> tuple[str, str] | None:
    """(id, secret) of a bearer token as ``authenticate`` reads it (surrounding whitespace
    ignored); None when it is malformed."""
    match = _TOKEN.fullmatch(token.strip())
    return None if match is None else (match[1], match[2])


def authenticate(session: Session, token: str) -> Principal:
    """The principal a bearer token stands for; AuthError for a malformed, unknown or revoked
    token (the message says which, never echoing the secret)."""
    parts = split_token(token)
    if parts is None:
        raise AuthError("malformed API token: expected pbt_<16 hex>_<43 characters>")
    token_id, secret = parts
    row = session.get(ApiToken, token_id)
    if row is None or not hmac.compare_digest(row.secret_sha256, _hash(secret)):
        raise AuthError(f"unknown API token {token_id}")
    return principal_of(session, row)


def principal_of(session: Session, row: ApiToken) -> Principal:
    """Who a token whose secret was checked stands for; AuthError if it was revoked or its
    user is disabled (checked on every request: a disabled user's tokens stop at once)."""
    if row.revoked_at is not None:
        raise AuthError(f"API token {row.id} was revoked at {row.revoked_at.isoformat()}")
    user = row.user
    if user.disabled_at is not None or user.deleted_at is not None:
        raise UserDisabled(user=user.name, token_id=row.id)
    return Principal(
        user=user.name,
        scopes=frozenset(row.scopes),
        namespaces=frozenset(namespaces_of(session, user)),
        is_admin=user.is_admin,
        token_id=row.id,
        granted=frozenset(row.scopes),
    )
