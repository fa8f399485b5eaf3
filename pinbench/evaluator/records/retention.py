"""Deleting recorded runs, by id or by a retention rule (decision 149).

A run's rows go (its results and attestations with it); its blobs stay: they become
unreferenced, and ``pinbench gc --blobs`` collects them after its grace period (decision
144), so a blob another row still names (an artifact's file, another run's outputs, a
remaining attestation's subject) is never removed by a deletion. A queued or running run is
never deleted: its server would write its record after the row was gone.

``prune`` keeps a run when it started less than ``keep_days`` days ago, or when it is among
the ``keep_last`` most recent finished runs of its lockfile; every other finished run goes.

Both read and write with plain SQL in one transaction (``Workspace.writes``, decision 303):
``runs delete`` and ``runs prune`` load no ORM.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pinbench.bounds import KEEP_DAYS, KEEP_LAST
from pinbench.errors import InvalidValue, UserError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pinbench.db.plain import Rows
    from pinbench.workspace import Workspace

UNFINISHED = ("queued", "running")


class RunUnfinished(UserError):
    """A run asked to be deleted is queued or running: nothing was deleted."""

    def __init__(self, *, run: str, status: str) -> None:
        super().__init__(
            f"run {run} is {status}: a queued or running run is never deleted "
            f"(cancel it first: `pinbench runs cancel {run}`); nothing was deleted"
        )
        self.run = run
        self.status = status


class InvalidRetention(InvalidValue):
    what = "retention"


@dataclass(frozen=True, slots=True)
class Doomed:
    """A run a deletion removes (or, in a dry run, would remove)."""

    id: str
    status: str
    started_at: datetime
    lockfile: str
    model: str | None

    def to_json(self) -> dict[str, Any]:
        started = self.started_at
        if started.tzinfo is None:
            started = started.replace(tzinfo=UTC)
        return {
            "id": self.id,
            "status": self.status,
            "started_at": started.isoformat(),
            "lockfile": self.lockfile,
            "model": self.model,
        }


@dataclass(frozen=True)
class Deleted:
    """What a deletion found: the runs, and whether they were removed (``deleted``)."""

    runs: list[Doomed]
    deleted: bool
    kept: int = 0
    """For a prune: the finished runs its rule keeps."""

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": [r.to_json() for r in self.runs],
            "deleted": self.deleted,
            "kept": self.kept,
        }


_LISTED = "id, status, started_at, lockfile_digest, model"
"""A doomed run's columns, in ``Doomed``'s order."""
_FINISHED = "status NOT IN ('queued', 'running')"
CHUNK = 500
"""Runs a statement names at most (its parameters bounded)."""


def _doomed(row: Sequence[Any]) -> Doomed:
    from pinbench.db.plain import when

    run, status, started, lockfile, model = row
    return Doomed(str(run), str(status), when(started), str(lockfile), model)


def _remove(rows: Rows, ids: list[str]) -> None:
    """The runs' rows and theirs; only finished runs (a run that started meanwhile stays)."""
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        names = ", ".join(f":r{n}" for n in range(len(chunk)))
        params = {f"r{n}": run for n, run in enumerate(chunk)}
        finished = f"SELECT id FROM runs WHERE id IN ({names}) AND {_FINISHED}"
        rows(f"DELETE FROM results WHERE run_id IN ({finished})", params)
        rows(f"DELETE FROM attestations WHERE run_id IN ({finished})", params)
        rows(f"DELETE FROM runs WHERE id IN ({names}) AND {_FINISHED}", params)


def delete_runs(ws: Workspace, run_ids: list[str], *, delete: bool) -> Deleted:
    """The runs named (ids or unique prefixes), removed when ``delete``: all or none (an
    unknown, ambiguous or unfinished one refuses the lot)."""
    from pinbench.evaluator.records.run_view import locate

    if not run_ids:
        raise UserError("name at least one run to delete (see `pinbench runs list`)")
    with ws.writes() as rows:
        found: dict[str, Doomed] = {}
        for given in run_ids:
            run = _doomed(locate(rows, given, _LISTED))
            if run.status in UNFINISHED:
                raise RunUnfinished(run=run.id, status=run.status)
            found.setdefault(run.id, run)
        doomed = list(found.values())
        if delete:
            _remove(rows, [d.id for d in doomed])
    return Deleted(doomed, delete)


def prune_runs(
    ws: Workspace, *, keep_days: float, keep_last: int, delete: bool, now: datetime | None = None
) -> Deleted:
    """The finished runs older than ``keep_days`` days and not among the ``keep_last`` most
    recent finished runs of their lockfile; removed when ``delete``."""
    if not KEEP_DAYS.holds(keep_days):
        raise InvalidRetention(
            text=str(keep_days), reason=KEEP_DAYS.refusal("--keep-days", keep_days)
        )
    if not KEEP_LAST.holds(keep_last):
        raise InvalidRetention(
            text=str(keep_last), reason=KEEP_LAST.refusal("--keep-last", keep_last)
        )
    cutoff = (now or datetime.now(UTC)) - timedelta(days=keep_days)
    ranked = (
        "SELECT id, started_at, ROW_NUMBER() OVER (PARTITION BY lockfile_digest "
        f"ORDER BY started_at DESC, id DESC) AS rank FROM runs WHERE {_FINISHED}"
    )
    going = f"SELECT id FROM ({ranked}) ranked WHERE rank > :keep_last AND started_at < :cutoff"
    with ws.writes() as rows:
        ((finished,),) = rows(f"SELECT COUNT(*) FROM runs WHERE {_FINISHED}", {})
        listed = rows(
            f"SELECT {_LISTED} FROM runs WHERE id IN ({going}) ORDER BY started_at, id",
            {"keep_last": keep_last, "cutoff": cutoff},
        )
        doomed = [_doomed(row) for row in listed]
        if delete:
            _remove(rows, [d.id for d in doomed])
    return Deleted(doomed, delete, kept=int(finished or 0) - len(doomed))
