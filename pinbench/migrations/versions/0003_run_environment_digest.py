"""run environment digest

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 22:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("environment_digest", sa.String(length=80), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_runs_environment_digest"), ["environment_digest"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_environment_digest"))
        batch_op.drop_column("environment_digest")
