"""runs: trace level and trace blob

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column("trace_level", sa.String(length=16), server_default="none", nullable=False)
        )
        batch.add_column(sa.Column("trace_sha256", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("trace_sha256")
        batch.drop_column("trace_level")
