"""Cancelling a run: a queued one never starts, a running one is stopped by the server that
runs it (its child process or container killed, or a local evaluation stopped at the next
query) and recorded ``cancelled`` with the reason.

The request goes through the database, so it works whichever server process (or the CLI on
the server's home) receives it: a queued run is marked ``cancelled`` at once (its pool skips
it: ``instances.begin``); a running one gets ``cancel_requested``, which its own pool reads
with its heartbeat. A running run whose server is gone (its lease expired) is marked
``cancelled`` at once: nobody else would stop it. A finished run cannot be cancelled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from pinbench.accounts import Forbidden
from pinbench.db.models import Run, ServerInstance
from pinbench.errors import UserError
from pinbench.evaluator.instances import UNFINISHED
from pinbench.evaluator.records.history import find_run, show_run
from pinbench.workspace import Workspace


class RunFinished(UserError):
    """The run already ended (HTTP 409): nothing to cancel."""

    def __init__(self, *, run: str, status: str) -> None:
        super().__init__(
            f"run {run} already finished ({status}): only a queued or running run can be cancelled"
        )
        self.run = run
        self.status = status


@dataclass(frozen=True, slots=True)
class Canceller:
    """Who asks: a user (their own runs only, unless admin), or None for the operator at the
    server's own database (the CLI without PINBENCH_URL)."""

    user: str | None
    admin: bool = False

    def reason(self) -> str:
        return f"cancelled by {self.user}" if self.user else "cancelled by the operator"


def request_cancel(ws: Workspace, run: str, by: Canceller) -> tuple[str, str]:
    """Cancel run ``run`` (an id or a unique prefix): return its full id and its status now
    (``cancelled``, or ``running`` until its server has stopped it)."""
    reason = by.reason()
    with ws.transaction() as session:
        row = find_run(session, run)
        run_id, status = row.id, row.status
        if status not in UNFINISHED:
            raise RunFinished(run=run_id, status=status)
        if by.user is not None and not by.admin and row.submitted_by != by.user:
            raise Forbidden(
                f"run {run_id} was not submitted by {by.user}: only its submitter or an admin "
                "may cancel it"
            )
        now = datetime.now(UTC)
        orphan = not _alive(session, row.instance_id, now)
        if status == "queued" or orphan:
            done = session.execute(
                update(Run)
                .where(Run.id == run_id, Run.status.in_(["queued"] if not orphan else UNFINISHED))
                .values(status="cancelled", error=reason, finished_at=now)
            )
            if done.rowcount:  # type: ignore[attr-defined]
                return run_id, "cancelled"
        session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status.in_(UNFINISHED))
            .values(cancel_requested=reason)
        )
        return run_id, "running"


def _alive(session: Session, instance: str | None, now: datetime) -> bool:
    """Does a server instance with an unexpired lease own the run?"""
    if instance is None:
        return False
    found = session.scalar(
        select(func.count())
        .select_from(ServerInstance)
        .where(ServerInstance.id == instance, ServerInstance.expires_at >= now)
    )
    return bool(found)


def wait_finished(
    ws: Workspace, run_id: str, say: Callable[[str], None], *, poll_s: float = 0.5
) -> dict[str, Any]:
    """Poll run ``run_id`` until it has finished (its server stopped it); report changes.
    Polled soon, then less often, up to every ``poll_s`` seconds (``polling.intervals``)."""
    from pinbench.polling import intervals

    pauses = intervals(poll_s)
    status = None
    while True:
        info = show_run(ws, run_id)
        if info["status"] != status:
            status = info["status"]
            say(f"run {run_id[:8]} {status}")
        if status not in UNFINISHED:
            return info
        time.sleep(next(pauses))
