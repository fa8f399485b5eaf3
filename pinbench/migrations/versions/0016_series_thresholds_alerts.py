"""series_thresholds and alerts: continuous benchmarking's registry state

``series_thresholds`` holds each version of a series' threshold on a metric (a new row per
change, older rows kept, decision 251); ``alerts`` holds the regressions a gate found and the
change points found when a run was recorded on a server, acknowledged and never deleted
(decision 253), one a finding (``uq_alerts_finding``: series, metric, kind, run). Both are new
tables: no existing row changes, and a downgrade drops them.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 03:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "series_thresholds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("series", sa.String(length=600), nullable=False),
        sa.Column("metric", sa.String(length=100), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("test", sa.String(length=16), nullable=False),
        sa.Column("direction", sa.String(length=8), nullable=False),
        sa.Column("max_change", sa.Float(), nullable=True),
        sa.Column("alpha", sa.Float(), nullable=False),
        sa.Column("window", sa.Integer(), nullable=False),
        sa.Column("min_runs", sa.Integer(), nullable=False),
        sa.Column("tolerance", sa.Float(), nullable=True),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("series", "metric", "version", name="uq_series_thresholds_version"),
    )
    op.create_table(
        "alerts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("series", sa.String(length=600), nullable=False),
        sa.Column("metric", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("acknowledged_by", sa.String(length=100), nullable=True),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("series", "metric", "kind", "run_id", name="uq_alerts_finding"),
    )
    op.create_index("ix_alerts_series_created", "alerts", ["series", "created_at"])
    op.create_index(op.f("ix_alerts_run_id"), "alerts", ["run_id"])
    op.create_index(op.f("ix_alerts_state"), "alerts", ["state"])


def downgrade() -> None:
    op.drop_index(op.f("ix_alerts_state"), table_name="alerts")
    op.drop_index(op.f("ix_alerts_run_id"), table_name="alerts")
    op.drop_index("ix_alerts_series_created", table_name="alerts")
    op.drop_table("alerts")
    op.drop_table("series_thresholds")
