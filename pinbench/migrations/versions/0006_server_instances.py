"""server instances with leases; runs: owning instance, submitter, cancel request

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "server_instances",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_server_instances_expires_at", "server_instances", ["expires_at"], unique=False
    )
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("instance_id", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("submitted_by", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("cancel_requested", sa.Text(), nullable=True))
        batch.create_index("ix_runs_instance_id", ["instance_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_instance_id")
        batch.drop_column("cancel_requested")
        batch.drop_column("submitted_by")
        batch.drop_column("instance_id")
    op.drop_index("ix_server_instances_expires_at", table_name="server_instances")
    op.drop_table("server_instances")
