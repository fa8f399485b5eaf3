"""Studies and their cells in the database, read and written with plain SQL
(``Workspace.reads`` and ``writes``), as the other working commands read and write.

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
ENDED = ("failed", "cancelled", "interrupted")
"""A run's statuses that end its cell ``failed`` (``succeeded`` ends it ``done``)."""
SHOWN = (
    "CASE WHEN c.state = 'running' AND r.status = 'succeeded' THEN 'done' "
    "WHEN c.state = 'running' AND r.status IN ('failed', 'cancelled', 'interrupted') "
    "THEN 'failed' ELSE c.state END"
)
"""A cell's state as its run says it (``from_run``), in SQL, over ``study_cells c`` joined
with its run ``r``."""


def from_run(
    state: str, reason: str | None, status: str | None, error: str | None
) -> tuple[str, str | None]:
    """A cell's state and reason as its run says them (issue 85, item 3): a cell recorded
    ``running`` whose run ended is ``done`` (it succeeded) or ``failed`` (the run's error),
    whatever the process that was waiting on it recorded or did not (a server that stopped or
    was killed); any other cell as recorded."""
    if state != "running" or status not in ("succeeded", *ENDED):
        return state, reason
    if status == "succeeded":
        return "done", None
    return "failed", error or status


CELLS_PER_STATEMENT = 500
"""Cells inserted by one statement (two parameters each: well within SQLite's limit)."""


def open_study(ws: Workspace, study: Study, source: str, cells: list[Cell]) -> int:
    """The study's id, recording it and its cells as planned the first time (another process
    doing the same at once is no error: the unique name and keys hold, the loser reads the
    winner's rows). A study of this name with another definition is refused."""
    import json

    from pinbench.db.errors import Conflict

    def existing() -> int | None:
        with ws.reads() as rows:
            found = rows("SELECT id, digest FROM studies WHERE name = :name", {"name": study.name})
        if not found:
            return None
        sid, digest = found[0]
        if digest != study.digest:
            raise StudyChanged(name=study.name, recorded=str(digest), given=study.digest)
        return int(sid)

    found = existing()
    if found is None:
        now = datetime.now(UTC)
        try:
            with ws.writes() as rows:
                ((sid,),) = rows(
                    "INSERT INTO studies (name, digest, definition, source, created_at) "
                    "VALUES (:name, :digest, :definition, :source, :now) RETURNING id",
                    {
                        "name": study.name,
                        "digest": study.digest,
                        "definition": json.dumps(study.to_data()),
                        "source": source[:1000],
                        "now": now,
                    },
                )
                for start in range(0, len(cells), CELLS_PER_STATEMENT):
                    chunk = cells[start : start + CELLS_PER_STATEMENT]
                    params: dict[str, Any] = {"sid": sid, "now": now}
                    for i, c in enumerate(chunk):
                        params |= {f"k{i}": c.key, f"p{i}": c.position}
                    values = ", ".join(
                        f"(:sid, :k{i}, :p{i}, 'planned', :now)" for i in range(len(chunk))
                    )
                    rows(
                        "INSERT INTO study_cells (study_id, key, position, state, updated_at) "
                        f"VALUES {values}",
                        params,
                    )
                return int(sid)
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
    assert state in STATES, state
    with ws.writes() as rows:
        rows(
            "UPDATE study_cells SET state = :state, lockfile_digest = :lock, run_id = :run, "
            "reason = :reason, updated_at = :now WHERE study_id = :sid AND key = :key",
            {
                "state": state,
                "lock": lockfile_digest,
                "run": run_id,
                "reason": reason,
                "now": datetime.now(UTC),
                "sid": study_id,
                "key": key,
            },
        )


def settle_cells(ws: Workspace, study_id: int) -> None:
    """Write each cell recorded ``running`` whose run ended as its run says it (``from_run``),
    in one statement."""
    ended = "('succeeded', 'failed', 'cancelled', 'interrupted')"
    with ws.writes() as rows:
        rows(
            "UPDATE study_cells SET "
            "state = (SELECT CASE WHEN r.status = 'succeeded' THEN 'done' ELSE 'failed' END "
            "FROM runs r WHERE r.id = study_cells.run_id), "
            "reason = (SELECT CASE WHEN r.status = 'succeeded' THEN NULL "
            "ELSE COALESCE(r.error, r.status) END FROM runs r WHERE r.id = study_cells.run_id), "
            "updated_at = :now WHERE study_id = :sid AND state = 'running' AND run_id IN "
            f"(SELECT id FROM runs WHERE status IN {ended})",
            {"sid": study_id, "now": datetime.now(UTC)},
        )


def replan_cells(ws: Workspace, study_id: int, keys: list[str]) -> None:
    """Record ``keys`` ``planned`` again, their last run and reason cleared: the cells a post
    runs again. Until its new run ends, a cell shows that it waits, never the last run's end
    (a client following the post read an old failure as the new run's, issue 85, item 3)."""
    now = datetime.now(UTC)
    for start in range(0, len(keys), CELLS_PER_STATEMENT):
        chunk = keys[start : start + CELLS_PER_STATEMENT]
        names = {f"k{i}": key for i, key in enumerate(chunk)}
        with ws.writes() as rows:
            rows(
                "UPDATE study_cells SET state = 'planned', run_id = NULL, reason = NULL, "
                f"updated_at = :now WHERE study_id = :sid AND key IN "
                f"({', '.join(':' + n for n in names)})",
                {"sid": study_id, "now": now, **names},
            )


def read_study(ws: Workspace, name: str) -> dict[str, Any]:
    """A recorded study: its name, definition, sha256, source and cells (by key: state,
    lockfile, run, reason), each cell's state as its run says it (``from_run``)."""
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
            "SELECT c.key, c.position, c.state, c.lockfile_digest, c.run_id, c.reason, "
            "r.status, r.error FROM study_cells c LEFT JOIN runs r ON r.id = c.run_id "
            "WHERE c.study_id = :sid ORDER BY c.position",
            {"sid": sid},
        )

    def cell(pos: int, state: str, lock: Any, run: Any, why: Any, status: Any, error: Any) -> Any:
        shown, reason = from_run(state, why, status, error)
        return {"position": pos, "state": shown, "lockfile": lock, "run": run, "reason": reason}

    return {
        "id": sid,
        "name": name,
        "digest": digest,
        "definition": json_value(definition),
        "source": source,
        "created_at": when(created).isoformat(),
        "cells": {key: cell(*rest) for key, *rest in cells},
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
            f"SELECT s.name, s.digest, s.created_at, {SHOWN} AS shown, COUNT(c.id) "
            "FROM studies s LEFT JOIN study_cells c ON c.study_id = s.id "
            "LEFT JOIN runs r ON r.id = c.run_id "
            "GROUP BY s.id, s.name, s.digest, s.created_at, shown ORDER BY s.created_at DESC",
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
    with ws.writes() as rows:
        found = rows("SELECT id FROM studies WHERE name = :name", {"name": name})
        if not found:
            raise StudyNotFound(name=name)
        sid = found[0][0]
        gone = rows("DELETE FROM study_cells WHERE study_id = :sid RETURNING id", {"sid": sid})
        rows("DELETE FROM studies WHERE id = :sid", {"sid": sid})
    return len(gone)
