"""signing_keys: a purpose (attestation / model-signing) and a retirement date (key rotation)

Keys recorded before were all attestation keys, all trusted: where a home's key file was
replaced, the old key stayed beside the new one. Each key but the newest is now marked retired
at the moment the key after it was recorded, so it verifies only what it signed before.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 10:00:00.000000
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("signing_keys") as batch:
        batch.add_column(sa.Column("purpose", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True))
        batch.alter_column(
            "public",
            existing_type=sa.String(length=64),
            type_=sa.String(length=400),
            existing_nullable=False,
        )
    conn = op.get_bind()
    keys = sa.table(
        "signing_keys",
        sa.column("keyid", sa.String()),
        sa.column("purpose", sa.String()),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("retired_at", sa.DateTime(timezone=True)),
    )
    conn.execute(sa.update(keys).values(purpose="attestation"))
    rows = conn.execute(
        sa.select(keys.c.keyid, keys.c.created_at).order_by(keys.c.created_at, keys.c.keyid)
    ).all()
    for (keyid, _), (_, successor_created) in itertools.pairwise(rows):
        conn.execute(
            sa.update(keys).where(keys.c.keyid == keyid).values(retired_at=successor_created)
        )
    with op.batch_alter_table("signing_keys") as batch:
        batch.alter_column("purpose", existing_type=sa.String(length=16), nullable=False)


def downgrade() -> None:
    op.execute("DELETE FROM signing_keys WHERE purpose <> 'attestation'")
    with op.batch_alter_table("signing_keys") as batch:
        batch.alter_column(
            "public",
            existing_type=sa.String(length=400),
            type_=sa.String(length=64),
            existing_nullable=False,
        )
        batch.drop_column("retired_at")
        batch.drop_column("purpose")
