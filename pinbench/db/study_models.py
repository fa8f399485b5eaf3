"""Studies and their cells (``pinbench.studies``): a study's definition as it was run, and
for each cell its lockfile, its run and what became of it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from pinbench.db.base import Base


class StudyRow(Base):
    """One study, by name: the definition its cells were made from (its sha256 refuses a
    changed file under the same name)."""

    __tablename__ = "studies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    digest: Mapped[str] = mapped_column(String(64))
    definition: Mapped[dict[str, Any]] = mapped_column(JSON)
    source: Mapped[str] = mapped_column(String(1000))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class StudyCellRow(Base):
    """One cell: ``planned`` until it runs, then ``done`` (its run succeeded), ``failed`` (its
    run did not) or ``refused`` (it could not be locked or placed), with the reason."""

    __tablename__ = "study_cells"
    __table_args__ = (UniqueConstraint("study_id", "key", name="uq_study_cells_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(1000))
    position: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    lockfile_digest: Mapped[str | None] = mapped_column(String(64))
    run_id: Mapped[str | None] = mapped_column(String(36), index=True)
    reason: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
