"""API tokens: ``pbt_<id>_<secret>``; only the sha256 of the secret is stored, so a token is
shown once, when it is created. Made for a user within what the asking token was issued with
(``pinbench.accounts``' scopes), listed, revoked, and checked on every request
(``authenticate``): the rows read and written with plain SQL (``Rows``: ``Workspace.reads`` and
``writes``, or ``db.plain.connection_rows`` over a caller's session)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pinbench.accounts import (
    SCOPES,
    USER_COLUMNS,
    AccountNotFound,
    AuthError,
    Forbidden,
    Principal,
    UserDisabled,
    check_scopes,
    get_user,
    live_user,
    namespaces_of,
    user_row,
    utc_now,
)
from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.db.plain import Rows

_TOKEN = re.compile(r"pbt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


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
    rows: Rows,
    user_name: str,
    *,
    name: str,
    scopes: list[str],
    within: Principal | None = None,
) -> tuple[str, list[str], str]:
    """Create a token; return its id, its scopes and the token text (the only time it is seen).

    ``within``: the token asking (through the API); the new token's scopes must be a subset of
    the scopes that token was issued with, and it is for the same user. None: the operator,
    on the server's own database.
    """
    user = live_user(rows, user_name, "create a token for it")
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
    rows(
        "INSERT INTO api_tokens (id, user_id, name, secret_sha256, scopes, created_at, "
        "revoked_at) VALUES (:id, :user, :name, :secret, :scopes, :now, NULL)",
        {
            "id": token_id,
            "user": user.id,
            "name": name,
            "secret": _hash(secret),
            "scopes": json.dumps(scopes),
            "now": utc_now(),
        },
    )
    return token_id, scopes, f"pbt_{token_id}_{secret}"


@dataclass(frozen=True, slots=True)
class TokenRow:
    """A row of ``api_tokens`` (``TOKEN_COLUMNS``), never its secret's digest."""

    id: str
    user_id: int
    name: str
    scopes: list[str]
    created_at: datetime
    revoked_at: datetime | None


TOKEN_COLUMNS = "id, user_id, name, scopes, created_at, revoked_at"


def _token(row: Sequence[Any]) -> TokenRow:
    from pinbench.db.plain import json_value, when, when_or_none

    id_, user_id, name, scopes, created, revoked = row
    return TokenRow(
        str(id_),
        int(user_id),
        str(name),
        list(json_value(scopes)),
        when(created),
        when_or_none(revoked),
    )


def token_row(rows: Rows, token_id: str) -> TokenRow | None:
    found = rows(f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE id = :id", {"id": token_id})
    return _token(found[0]) if found else None


def revoke_token(rows: Rows, token_id: str, *, by: Principal | None = None) -> None:
    """Revoke a token; ``by`` (when given) must own it or be an admin."""
    found = rows(
        "SELECT users.name FROM api_tokens JOIN users ON users.id = api_tokens.user_id "
        "WHERE api_tokens.id = :id",
        {"id": token_id},
    )
    if not found:
        raise AccountNotFound(what=f"token {token_id!r}")
    is_admin = by is not None and by.is_admin and "admin" in by.scopes
    if by is not None and not is_admin and found[0][0] != by.user:
        raise Forbidden(f"token {token_id} belongs to another user")
    rows(
        "UPDATE api_tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL",
        {"now": utc_now(), "id": token_id},
    )


def list_tokens(rows: Rows, user_name: str) -> list[dict[str, Any]]:
    user = get_user(rows, user_name)
    found = rows(
        f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE user_id = :user ORDER BY created_at, id",
        {"user": user.id},
    )
    return [
        {
            "id": t.id,
            "name": t.name,
            "scopes": t.scopes,
            "created_at": t.created_at.isoformat(),
            "revoked": t.revoked_at is not None,
        }
        for t in map(_token, found)
    ]


def split_token(token: str) -> tuple[str, str] | None:
    """(id, secret) of a bearer token as ``authenticate`` reads it (surrounding whitespace
    ignored); None when it is malformed."""
    match = _TOKEN.fullmatch(token.strip())
    return None if match is None else (match[1], match[2])


def authenticate(rows: Rows, token: str) -> Principal:
    """The principal a bearer token stands for; AuthError for a malformed, unknown or revoked
    token (the message says which, never echoing the secret)."""
    parts = split_token(token)
    if parts is None:
        raise AuthError("malformed API token: expected pbt_<16 hex>_<43 characters>")
    token_id, secret = parts
    found = rows("SELECT secret_sha256 FROM api_tokens WHERE id = :id", {"id": token_id})
    if not found or not hmac.compare_digest(str(found[0][0]), _hash(secret)):
        raise AuthError(f"unknown API token {token_id}")
    return principal_of(rows, token_id)


def principal_of(rows: Rows, token_id: str) -> Principal:
    """Who the token ``token_id`` (whose secret was checked) stands for; AuthError if it was
    revoked or its user is disabled (checked on every request: a disabled user's tokens stop at
    once)."""
    row = token_row(rows, token_id)
    if row is None:
        raise AuthError(f"unknown API token {token_id}")
    if row.revoked_at is not None:
        raise AuthError(f"API token {row.id} was revoked at {row.revoked_at.isoformat()}")
    (found,) = rows(f"SELECT {USER_COLUMNS} FROM users WHERE id = :id", {"id": row.user_id})
    user = user_row(found)
    if user.disabled_at is not None or user.deleted_at is not None:
        raise UserDisabled(user=user.name, token_id=row.id)
    return Principal(
        user=user.name,
        scopes=frozenset(row.scopes),
        namespaces=frozenset(namespaces_of(rows, user)),
        is_admin=user.is_admin,
        token_id=row.id,
        granted=frozenset(row.scopes),
    )
