"""Deleting recorded runs, by id or by a retention rule (decision 149).

A run's rows go (its results and attestations with it); its blobs stay: they become
unreferenced, and ``pinbench gc --blobs`` collects them after its grace period (decision
144), so a blob another row still names (an artifact's file, another run's outputs, a
remaining attestation's subject) is never removed by a deletion. A queued or running run is
never deleted: its server would write its record after the row was gone.

``prune`` keeps a run when it started less than ``keep_days`` days ago, or when it is among
the ``keep_last`` most recent finished runs of its lockfile; every other finished run goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select

from pinbench.bounds import KEEP_DAYS, KEEP_LAST
from pinbench.db.models import Attestation, Result, Run
from pinbench.errors import InvalidValue, UserError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

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


def _doomed(run: Run) -> Doomed:
    return Doomed(run.id, run.status, run.started_at, run.lockfile_digest, run.model)


_LISTED = (Run.id, Run.status, Run.started_at, Run.lockfile_digest, Run.model)
"""A doomed run's columns: read as rows, not as ORM objects (a prune may list a million)."""


def _remove(session: Session, ids: list[str]) -> None:
    """The runs' rows and theirs; only finished runs (a run that started meanwhile stays).
    Plain statements: the session's objects are not searched for each one."""
    plain = {"synchronize_session": False}
    for start in range(0, len(ids), 500):  # bound each statement's parameters
        chunk = ids[start : start + 500]
        finished = select(Run.id).where(Run.id.in_(chunk), Run.status.not_in(UNFINISHED))
        for stmt in (
            delete(Result).where(Result.run_id.in_(finished)),
            delete(Attestation).where(Attestation.run_id.in_(finished)),
            delete(Run).where(Run.id.in_(chunk), Run.status.not_in(UNFINISHED)),
        ):
            session.execute(stmt, execution_options=plain)


def delete_runs(ws: Workspace, run_ids: list[str], *, delete: bool) -> Deleted:
    """The runs named (ids or unique prefixes), removed when ``delete``: all or none (an
    unknown, ambiguous or unfinished one refuses the lot)."""
    from pinbench.evaluator.records.history import find_run

    if not run_ids:
        raise UserError("name at least one run to delete (see `pinbench runs list`)")
    with ws.transaction() as session:
        found: dict[str, Doomed] = {}
        for given in run_ids:
            run = find_run(session, given)
            if run.status in UNFINISHED:
                raise RunUnfinished(run=run.id, status=run.status)
            found.setdefault(run.id, _doomed(run))
        doomed = list(found.values())
        if delete:
            _remove(session, [d.id for d in doomed])
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
    rank = (
        func.row_number()
        .over(partition_by=Run.lockfile_digest, order_by=(Run.started_at.desc(), Run.id.desc()))
        .label("rank")
    )
    ranked = (
        select(Run.id.label("id"), Run.started_at.label("started_at"), rank)
        .where(Run.status.not_in(UNFINISHED))
        .subquery()
    )
    with ws.transaction() as session:
        finished = session.scalar(
            select(func.count()).select_from(Run).where(Run.status.not_in(UNFINISHED))
        )
        going = select(ranked.c.id).where(ranked.c.rank > keep_last)
        going = going.where(ranked.c.started_at < cutoff)
        rows = session.execute(
            select(*_LISTED).where(Run.id.in_(going)).order_by(Run.started_at, Run.id)
        ).all()
        doomed = [Doomed(*row) for row in rows]
        if delete:
            _remove(session, [d.id for d in doomed])
    return Deleted(doomed, delete, kept=(finished or 0) - len(doomed))
