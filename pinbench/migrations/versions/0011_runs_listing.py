"""runs: the model and framework a run's lockfile names, as columns, and indexes for listing

A run list filtered by model, framework, status or system, newest first, a page at a time,
reads one index (decision 148). Runs recorded before get their model and framework from their
lockfile here, one UPDATE per lockfile.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 07:00:00.000000
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("model", "model_version", "framework", "framework_version")
_INDEXES = {
    "ix_runs_started": ["started_at", "id"],
    "ix_runs_model_started": ["model", "started_at", "id"],
    "ix_runs_framework_started": ["framework", "started_at", "id"],
    "ix_runs_status_started": ["status", "started_at", "id"],
    "ix_runs_system_started": ["system", "started_at", "id"],
}


def _names(body: str) -> dict[str, str | None]:
    """The model and framework a lockfile's canonical JSON names (None where it has none)."""
    data: Any = json.loads(body)
    model = data.get("model") or {}
    env = data.get("environment") or {}
    return {
        "model": model.get("name"),
        "model_version": model.get("version"),
        "framework": env.get("framework"),
        "framework_version": env.get("version"),
    }


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for column in _COLUMNS:
            batch.add_column(sa.Column(column, sa.String(length=200), nullable=True))
    conn = op.get_bind()
    runs = sa.table(
        "runs", sa.column("lockfile_digest", sa.String()), *(sa.column(c) for c in _COLUMNS)
    )
    lockfiles = sa.table(
        "lockfiles", sa.column("digest", sa.String()), sa.column("body", sa.Text())
    )
    used = sa.select(runs.c.lockfile_digest).distinct().scalar_subquery()
    for digest, body in conn.execute(
        sa.select(lockfiles.c.digest, lockfiles.c.body).where(lockfiles.c.digest.in_(used))
    ):
        conn.execute(runs.update().where(runs.c.lockfile_digest == digest).values(**_names(body)))
    for name, columns in _INDEXES.items():
        op.create_index(name, "runs", columns)


def downgrade() -> None:
    for name in _INDEXES:
        op.drop_index(name, table_name="runs")
    with op.batch_alter_table("runs") as batch:
        for column in reversed(_COLUMNS):
            batch.drop_column(column)
