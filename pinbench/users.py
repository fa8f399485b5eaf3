"""A user's life after ``user add``: disable (every request with their tokens refused at once),
enable, delete (tokens revoked, memberships removed, the row kept so that their name still
attributes what they published and ran, and is never given to someone else). The last
enabled admin can be neither disabled nor deleted (decision 150). Plain SQL on ``Rows``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinbench.accounts import LastAdmin, UserRow, live_user, status_of, utc_now

if TYPE_CHECKING:
    from pinbench.db.plain import Rows


def _refuse_last_admin(rows: Rows, user: UserRow, action: str) -> None:
    if not user.is_admin or user.disabled_at is not None:
        return
    ((others,),) = rows(
        "SELECT COUNT(*) FROM users WHERE is_admin = :admin AND disabled_at IS NULL "
        "AND deleted_at IS NULL AND id != :id",
        {"admin": True, "id": user.id},
    )
    if not others:
        raise LastAdmin(user=user.name, action=action)


def _end_sessions(rows: Rows, user: UserRow) -> None:
    rows(
        "DELETE FROM ui_sessions WHERE token_id IN (SELECT id FROM api_tokens WHERE user_id = :id)",
        {"id": user.id},
    )


def disable_user(rows: Rows, name: str) -> str:
    """Refuse every token of ``name`` from now on (its UI sessions end); its status before."""
    user = live_user(rows, name, "disable it")
    before = status_of(user)
    _refuse_last_admin(rows, user, "disable")
    if user.disabled_at is None:
        rows(
            "UPDATE users SET disabled_at = :now WHERE id = :id", {"now": utc_now(), "id": user.id}
        )
    _end_sessions(rows, user)
    return before


def enable_user(rows: Rows, name: str) -> str:
    """Let ``name``'s unrevoked tokens work again; its status before."""
    user = live_user(rows, name, "enable it")
    before = status_of(user)
    rows("UPDATE users SET disabled_at = NULL WHERE id = :id", {"id": user.id})
    return before


def delete_user(rows: Rows, name: str) -> int:
    """Delete ``name``: revoke its tokens, end its sessions, remove its memberships; the row
    stays, marked deleted. The number of tokens revoked."""
    user = live_user(rows, name, "delete it")
    _refuse_last_admin(rows, user, "delete")
    now = utc_now()
    _end_sessions(rows, user)
    revoked = rows(
        "UPDATE api_tokens SET revoked_at = :now WHERE user_id = :id AND revoked_at IS NULL "
        "RETURNING id",
        {"now": now, "id": user.id},
    )
    rows("DELETE FROM namespace_members WHERE user_id = :id", {"id": user.id})
    rows("UPDATE users SET deleted_at = :now WHERE id = :id", {"now": now, "id": user.id})
    return len(revoked)
