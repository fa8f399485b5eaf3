"""users: disabled and deleted marks; ui_sessions: web UI logins that stand for a token

A disabled user's tokens are refused on every request; a deleted user's row stays (their name
attributes what they published and ran) with its tokens revoked. The UI's cookie holds a
session id and secret, never the API token (decision 150).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 07:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "ui_sessions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("token_id", sa.String(length=32), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["token_id"], ["api_tokens.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_ui_sessions_token_id", "ui_sessions", ["token_id"])
    op.create_index("ix_ui_sessions_expires_at", "ui_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_ui_sessions_expires_at", table_name="ui_sessions")
    op.drop_index("ix_ui_sessions_token_id", table_name="ui_sessions")
    op.drop_table("ui_sessions")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("deleted_at")
        batch.drop_column("disabled_at")
