"""Studies and their cells in the database: written through the ORM, read through plain SQL
(``pinbench.db.plain``), as the other working commands read.

A study's name holds one definition (its sha256): a changed file under the same name is
refused, so a cell means one thing for as long as its study exists. Its cells are inserted
as ``planned`` when the study is first run; each is then updated as it runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pinbench.studies.errors import StudyChanged, StudyNotFound

if TYPE_CHECKING:
    from pinbench.studies.cells import Cell
    from pinbench.studies.spec import Study
    from pinbench.workspace import Workspace

STATES = ("planned", "running", "done", "failed", "refused")
"""``running``: its run is queued or running on a cluster's agent (``api.study_runs``)."""


def open_study(ws: Workspace, study: Study, source: str, cells: list[Cell]) -> int:
    """The study's id, recording it and its cells as planned the first time (another process
    doing the same at once is no error: the unique name and keys hold, the loser reads the
    winner's rows). A study of this name with another definition is refused."""
    from sqlalchemy import select

    from pinbench.db.errors import Conflict
    from pinbench.db.study_models import StudyCellRow, StudyRow

    def existing() -> int | None:
        with ws.transaction() as session:
            row = session.scalars(select(StudyRow).where(StudyRow.name == study.name)).first()
            if row is None:
                return None
            if row.digest != study.digest:
                raise StudyChanged(name=study.name, recorded=row.digest, given=study.digest)
            return row.id

    found = existing()
    if found is None:
        now = datetime.now(UTC)
        try:
            with ws.transaction() as session:
                row = StudyRow(
                    name=study.name,
                    digest=study.digest,
                    definition=study.to_data(),
                    source=source[:1000],
                    created_at=now,
                )
                session.add(row)
                session.flush()
                session.add_all(
                    StudyCellRow(
                        study_id=row.id,
                        key=c.key,
                        position=c.position,
                        state="planned",
                        updated_at=now,
                    )
                    for c in cells
                )
                session.flush()
                return row.id
        except Conflict:
            found = existing()
            if found is None:
                raise
    return found


def record_cell(
    ws: Workspace,
    study_id: int,
    key: str,
    *,
    state: str,
    lockfile_digest: str | None = None,
    run_id: str | None = None,
    reason: str | None = None,
) -> None:
    from sqlalchemy import update

    from pinbench.db.study_models import StudyCellRow

    assert state in STATES, state
    with ws.transaction() as session:
        session.execute(
            update(StudyCellRow)
            .where(StudyCellRow.study_id == study_id, StudyCellRow.key == key)
            .values(
                state=state,
                lockfile_digest=lockfile_digest,
                run_id=run_id,
                reason=reason,
                updated_at=datetime.now(UTC),
            )
        )


def read_study(ws: Workspace, name: str) -> dict[str, Any]:
    """A recorded study: its name, definition, sha256, source and cells (by key: state,
    lockfile, run, reason)."""
    from pinbench.db.plain import json_value, when

    with ws.reads() as rows:
        found = rows(
            "SELECT id, name, digest, definition, source, created_at FROM studies "
            "WHERE name = :name",
            {"name": name},
        )
        if not found:
            raise StudyNotFound(name=name)
        sid, _, digest, definition, source, created = found[0]
        cells = rows(
            "SELECT key, position, state, lockfile_digest, run_id, reason FROM study_cells "
            "WHERE study_id = :sid ORDER BY position",
            {"sid": sid},
        )
    return {
        "id": sid,
        "name": name,
        "digest": digest,
        "definition": json_value(definition),
        "source": source,
        "created_at": when(created).isoformat(),
        "cells": {
            key: {"position": pos, "state": state, "lockfile": lock, "run": run, "reason": why}
            for key, pos, state, lock, run, why in cells
        },
    }


def read_cell(ws: Workspace, study_id: int, key: str) -> dict[str, Any]:
    """One cell of a recorded study: its state, lockfile, run and reason."""
    with ws.reads() as rows:
        found = rows(
            "SELECT state, lockfile_digest, run_id, reason FROM study_cells "
            "WHERE study_id = :sid AND key = :key",
            {"sid": study_id, "key": key},
        )
    state, lock, run, why = found[0]
    return {"state": state, "lockfile": lock, "run": run, "reason": why}


def list_studies(ws: Workspace) -> list[dict[str, Any]]:
    """Every recorded study with its cells counted by state, newest first."""
    from pinbench.db.plain import when

    with ws.reads() as rows:
        found = rows(
            "SELECT s.name, s.digest, s.created_at, c.state, COUNT(c.id) FROM studies s "
            "LEFT JOIN study_cells c ON c.study_id = s.id "
            "GROUP BY s.id, s.name, s.digest, s.created_at, c.state ORDER BY s.created_at DESC",
            {},
        )
    out: dict[str, dict[str, Any]] = {}
    for name, digest, created, state, count in found:
        entry = out.setdefault(
            name,
            {"name": name, "digest": digest, "created_at": when(created).isoformat(), "cells": {}},
        )
        if state is not None:
            entry["cells"][state] = int(count)
    return list(out.values())


def forget_study(ws: Workspace, name: str) -> int:
    """Delete the study ``name`` and its cells; how many cells it had."""
    from sqlalchemy import delete, func, select

    from pinbench.db.study_models import StudyCellRow, StudyRow

    with ws.transaction() as session:
        row = session.scalars(select(StudyRow).where(StudyRow.name == name)).first()
        if row is None:
            raise StudyNotFound(name=name)
        count = session.scalar(
            select(func.count()).select_from(StudyCellRow).where(StudyCellRow.study_id == row.id)
        )
        session.execute(delete(StudyCellRow).where(StudyCellRow.study_id == row.id))
        session.delete(row)
    return int(count or 0)
