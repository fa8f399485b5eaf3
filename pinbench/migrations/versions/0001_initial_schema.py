"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 19:55:52.080853
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("namespace", sa.String(length=100), nullable=True),
        sa.Column("version", sa.String(length=200), nullable=False),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("manifest_digest", sa.String(length=64), nullable=False),
        sa.Column("requires", sa.JSON(), nullable=False),
        sa.Column("publisher", sa.String(length=200), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("yanked", sa.Boolean(), nullable=False),
        sa.Column("yank_reason", sa.Text(), nullable=True),
        sa.Column("yanked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "name", "version", name="uq_artifacts_kind_name_version"),
    )
    op.create_index("ix_artifacts_kind_name", "artifacts", ["kind", "name"], unique=False)

    op.create_table(
        "lockfiles",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest"),
    )
    op.create_table(
        "artifact_files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("artifact_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("artifact_id", "path", name="uq_artifact_files_path"),
    )
    op.create_index("ix_artifact_files_sha256", "artifact_files", ["sha256"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("lockfile_digest", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("runner", sa.String(length=32), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("host", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["lockfile_digest"],
            ["lockfiles.digest"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_runs_lockfile_digest", "runs", ["lockfile_digest"], unique=False)

    op.create_table(
        "results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("metric", sa.String(length=100), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("unit", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "metric", name="uq_results_run_metric"),
    )


def downgrade() -> None:
    op.drop_table("results")
    op.drop_index("ix_runs_lockfile_digest", table_name="runs")

    op.drop_table("runs")
    op.drop_index("ix_artifact_files_sha256", table_name="artifact_files")

    op.drop_table("artifact_files")
    op.drop_table("lockfiles")
    op.drop_index("ix_artifacts_kind_name", table_name="artifacts")

    op.drop_table("artifacts")
