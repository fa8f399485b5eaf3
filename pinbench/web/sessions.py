"""Web UI logins: the cookie holds a session, never the API token (decision 150).

Logging in with a token makes a ``ui_sessions`` row (the sha256 of a fresh secret, the token's
id, an expiry) and gives the browser ``pbs_<id>_<secret>``. Each page looks the session up and
then the token it stands for, exactly as a bearer token is checked: a revoked token, a
disabled or deleted user ends the session on the next request. Logging out deletes the row,
so a copied cookie stops working too.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pinbench.accounts import AuthError, Principal
from pinbench.api_tokens import principal_of

if TYPE_CHECKING:
    from pinbench.db.plain import Rows

COOKIE = "pinbench_session"
LEGACY_COOKIE = "pinbench_token"
"""What pinbench before decision 150 kept (the raw token): no longer read; logging in or out
deletes it."""
SESSION_S = 12 * 3600
"""How long a login lasts (the cookie's Max-Age, and the row's expiry)."""
_VALUE = re.compile(r"pbs_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")


class SessionEnded(AuthError):
    """A UI session cookie that stands for no live session (said without its secret)."""

    def __init__(self, *, session_id: str | None, reason: str) -> None:
        named = f"UI session {session_id}" if session_id else "the UI session cookie"
        super().__init__(f"{named} {reason}: log in again")
        self.session_id = session_id
        self.reason = reason


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def session_id_of(value: str) -> str | None:
    """The id part of a cookie value, else None (never the secret)."""
    match = _VALUE.fullmatch(value)
    return match.group(1) if match else None


def open_session(rows: Rows, token_id: str) -> str:
    """Start a session for the token ``token_id`` (which the caller authenticated); the
    cookie's value."""
    now = datetime.now(UTC)
    session_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    rows(
        "INSERT INTO ui_sessions (id, token_id, secret_sha256, created_at, expires_at) "
        "VALUES (:id, :token, :secret, :now, :expires)",
        {
            "id": session_id,
            "token": token_id,
            "secret": _hash(secret),
            "now": now,
            "expires": now + timedelta(seconds=SESSION_S),
        },
    )
    rows("DELETE FROM ui_sessions WHERE expires_at < :now", {"now": now})  # long-gone logins
    return f"pbs_{session_id}_{secret}"


def _row(rows: Rows, value: str) -> tuple[str, str, datetime]:
    """The session ``value`` stands for: its id, its token's id and when it expires."""
    from pinbench.db.plain import when

    match = _VALUE.fullmatch(value.strip())
    if match is None:
        raise SessionEnded(session_id=None, reason="is malformed")
    session_id, secret = match.groups()
    found = rows(
        "SELECT secret_sha256, token_id, expires_at FROM ui_sessions WHERE id = :id",
        {"id": session_id},
    )
    if not found or not hmac.compare_digest(str(found[0][0]), _hash(secret)):
        raise SessionEnded(session_id=session_id, reason="has ended")
    return session_id, str(found[0][1]), when(found[0][2])


def session_principal(rows: Rows, value: str) -> Principal:
    """Who the session cookie ``value`` stands for, checked like its token on every request."""
    session_id, token_id, expires = _row(rows, value)
    if expires <= datetime.now(UTC):
        raise SessionEnded(session_id=session_id, reason=f"expired at {expires.isoformat()}")
    return principal_of(rows, token_id)


def close_session(rows: Rows, value: str) -> None:
    """End the session ``value`` stands for (nothing when it stands for none)."""
    try:
        session_id = _row(rows, value)[0]
    except SessionEnded:
        return
    rows("DELETE FROM ui_sessions WHERE id = :id", {"id": session_id})
