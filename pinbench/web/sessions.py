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

from sqlalchemy import delete
from sqlalchemy.orm import Session

from pinbench.accounts import AuthError, Principal, principal_of
from pinbench.db.models import UiSession

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


def open_session(session: Session, token_id: str) -> str:
    """Start a session for the token ``token_id`` (which the caller authenticated); the
    cookie's value."""
    now = datetime.now(UTC)
    session_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    session.add(
        UiSession(
            id=session_id,
            token_id=token_id,
            secret_sha256=_hash(secret),
            created_at=now,
            expires_at=now + timedelta(seconds=SESSION_S),
        )
    )
    session.execute(delete(UiSession).where(UiSession.expires_at < now))  # long-gone logins
    return f"pbs_{session_id}_{secret}"


def _row(session: Session, value: str) -> UiSession:
    match = _VALUE.fullmatch(value.strip())
    if match is None:
        raise SessionEnded(session_id=None, reason="is malformed")
    session_id, secret = match.groups()
    row = session.get(UiSession, session_id)
    if row is None or not hmac.compare_digest(row.secret_sha256, _hash(secret)):
        raise SessionEnded(session_id=session_id, reason="has ended")
    return row


def session_principal(session: Session, value: str) -> Principal:
    """Who the session cookie ``value`` stands for, checked like its token on every request."""
    row = _row(session, value)
    expires = row.expires_at
    if expires.tzinfo is None:  # SQLite hands back naive datetimes
        expires = expires.replace(tzinfo=UTC)
    if expires <= datetime.now(UTC):
        raise SessionEnded(session_id=row.id, reason=f"expired at {expires.isoformat()}")
    return principal_of(session, row.token)


def close_session(session: Session, value: str) -> None:
    """End the session ``value`` stands for (nothing when it stands for none)."""
    try:
        row = _row(session, value)
    except SessionEnded:
        return
    session.delete(row)
