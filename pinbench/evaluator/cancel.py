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
from typing import TYPE_CHECKING, Any

from pinbench.accounts import Forbidden
from pinbench.db.run_record import UNFINISHED
from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import locate, show_run
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.db.plain import Rows


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
    with ws.writes() as rows:
        found, status, submitted_by, instance = locate(
            rows, run, "id, status, submitted_by, instance_id"
        )
        run_id, status = str(found), str(status)
        if status not in UNFINISHED:
            raise RunFinished(run=run_id, status=status)
        if by.user is not None and not by.admin and submitted_by != by.user:
            raise Forbidden(
                f"run {run_id} was not submitted by {by.user}: only its submitter or an admin "
                "may cancel it"
            )
        now = datetime.now(UTC)
        orphan = not _alive(rows, instance, now)
        if status == "queued" or orphan:
            which = "('queued', 'running')" if orphan else "('queued')"
            done = rows(
                "UPDATE runs SET status = 'cancelled', error = :reason, finished_at = :now "
                f"WHERE id = :id AND status IN {which} RETURNING id",
                {"reason": reason, "now": now, "id": run_id},
            )
            if done:
                return run_id, "cancelled"
        rows(
            "UPDATE runs SET cancel_requested = :reason "
            "WHERE id = :id AND status IN ('queued', 'running')",
            {"reason": reason, "id": run_id},
        )
        return run_id, "running"


def _alive(rows: Rows, instance: str | None, now: datetime) -> bool:
    """Does a server instance with an unexpired lease own the run?"""
    if instance is None:
        return False
    return bool(
        rows(
            "SELECT id FROM server_instances WHERE id = :id AND expires_at >= :now",
            {"id": instance, "now": now},
        )
    )


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
