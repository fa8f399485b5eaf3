"""A user's life after ``user add``: disable (every request with their tokens refused at once),
enable, delete (tokens revoked, memberships removed, the row kept so that their name still
attributes what they published and ran, and is never given to someone else). The last
enabled admin can be neither disabled nor deleted (decision 150)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from pinbench.accounts import LastAdmin, live_user, status_of
from pinbench.db.models import ApiToken, NamespaceMember, UiSession, User


def _now() -> datetime:
    return datetime.now(UTC)


def _refuse_last_admin(session: Session, user: User, action: str) -> None:
    if not user.is_admin or user.disabled_at is not None:
        return
    others = session.scalar(
        select(func.count(User.id)).where(
            User.is_admin.is_(True),
            User.disabled_at.is_(None),
            User.deleted_at.is_(None),
            User.id != user.id,
        )
    )
    if not others:
        raise LastAdmin(user=user.name, action=action)


def _end_sessions(session: Session, user: User) -> None:
    tokens = select(ApiToken.id).where(ApiToken.user_id == user.id)
    session.execute(delete(UiSession).where(UiSession.token_id.in_(tokens)))


def disable_user(session: Session, name: str) -> str:
    """Refuse every token of ``name`` from now on (its UI sessions end); its status before."""
    user = live_user(session, name, "disable it")
    before = status_of(user)
    _refuse_last_admin(session, user, "disable")
    if user.disabled_at is None:
        user.disabled_at = _now()
    _end_sessions(session, user)
    return before


def enable_user(session: Session, name: str) -> str:
    """Let ``name``'s unrevoked tokens work again; its status before."""
    user = live_user(session, name, "enable it")
    before = status_of(user)
    user.disabled_at = None
    return before


def delete_user(session: Session, name: str) -> int:
    """Delete ``name``: revoke its tokens, end its sessions, remove its memberships; the row
    stays, marked deleted. The number of tokens revoked."""
    user = live_user(session, name, "delete it")
    _refuse_last_admin(session, user, "delete")
    now = _now()
    _end_sessions(session, user)
    live = session.scalars(
        select(ApiToken).where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
    ).all()
    for token in live:
        token.revoked_at = now
    session.execute(delete(NamespaceMember).where(NamespaceMember.user_id == user.id))
    user.deleted_at = now
    return len(live)
