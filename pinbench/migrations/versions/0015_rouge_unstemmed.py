"""results: ROUGE recorded before MLPerf's stemming keeps its numbers as ``*_unstemmed``

pinbench recorded ``rouge1``, ``rouge2`` and ``rouge_l`` without stemming (rouge-score's
``use_stemmer=False``). Those names now mean MLPerf's ROUGE (``use_stemmer=True``; decision
161) and the unstemmed figures are recorded as ``rouge1_unstemmed``, ``rouge2_unstemmed``,
``rouge_l_unstemmed``. Runs recorded before keep every number under the name that says what
it is, so a comparison or a rerun verdict never sets an unstemmed figure against a stemmed
one (one UPDATE of ``results``). A run's attested ``results.json`` (decision 111) stays the
record as it was made, under the names of its day.

A downgrade renames them back and drops the stemmed figures, which the older code has no
name for.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 21:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAMES = ("rouge1", "rouge2", "rouge_l")
SUFFIX = "_unstemmed"


def upgrade() -> None:
    op.get_bind().execute(
        sa.text("UPDATE results SET metric = metric || :suffix WHERE metric IN (:a, :b, :c)"),
        {"suffix": SUFFIX, "a": NAMES[0], "b": NAMES[1], "c": NAMES[2]},
    )


def downgrade() -> None:
    bind = op.get_bind()
    bind.execute(
        sa.text("DELETE FROM results WHERE metric IN (:a, :b, :c)"),
        dict(zip("abc", NAMES, strict=True)),
    )
    for name in NAMES:
        bind.execute(
            sa.text("UPDATE results SET metric = :old WHERE metric = :new"),
            {"old": name, "new": name + SUFFIX},
        )
