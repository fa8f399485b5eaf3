"""systems (cluster agents and their hardware); runs: the system a run ran on, the run it retries

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-10 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "systems",
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("facts", sa.JSON(), nullable=False),
        sa.Column("node_id", sa.String(length=64), nullable=True),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("system", sa.String(length=63), nullable=True))
        batch.add_column(sa.Column("retry_of", sa.String(length=36), nullable=True))
        batch.create_index("ix_runs_system", ["system"], unique=False)
        batch.create_index("ix_runs_retry_of", ["retry_of"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_retry_of")
        batch.drop_index("ix_runs_system")
        batch.drop_column("retry_of")
        batch.drop_column("system")
    op.drop_table("systems")
