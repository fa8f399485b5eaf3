"""Server instances: which server process owns a queued or running run, and for how long.

Each server process's run pool registers an instance (a row in ``server_instances``) and
renews its lease while it lives (a heartbeat); every run it queues names it. A server that
starts, and every live server while it serves (each ``Lease.sweep_s``), marks interrupted
only the unfinished runs whose instance's lease has expired (or that name none, left by a
pinbench before instances); a pool that stops marks its own. So a second ``pinbench serve``
on the same home or database never touches the first one's live runs, and the runs of a
server killed outright are marked within its lease and one sweep of any live server.

Leases are compared with the servers' own UTC clocks: servers sharing a database need clocks
that agree to within the lease (NTP does). An instance that stalls past its lease (a frozen
VM) loses its runs to the next server that starts; a run it still finishes is not recorded
over the ``interrupted`` mark: a finished record is written once (``evaluator.run._record``),
and every mark here is an UPDATE whose WHERE names the unfinished statuses, so a run that
finished meanwhile keeps its record.
"""

from __future__ import annotations

import math
import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, or_, select, update

from pinbench.db import pending
from pinbench.db.models import Run, ServerInstance
from pinbench.errors import InvalidValue
from pinbench.workspace import Workspace

LEASE_S = 30.0
"""How long an instance counts as alive after its last heartbeat (by default)."""
LEASE_ENV = "PINBENCH_SERVER_LEASE_S"
"""The lease in seconds, for a server that must notice a dead one sooner (tests) or later."""
MIN_LEASE_S, MAX_LEASE_S = 1.0, 3600.0


class BadLease(InvalidValue):
    what = LEASE_ENV


@dataclass(frozen=True)
class Lease:
    """A server instance's timing: alive ``lease_s`` after its last renewal, renewed every
    ``renew_s`` (six times a lease, so a few slow beats never let it lapse), and every
    ``sweep_s`` it marks the runs of expired instances interrupted."""

    lease_s: float = LEASE_S

    @property
    def renew_s(self) -> float:
        return self.lease_s / 6

    @property
    def sweep_s(self) -> float:
        return self.lease_s / 3


def lease_from_env(env: Mapping[str, str] | None = None) -> Lease:
    """The lease ``PINBENCH_SERVER_LEASE_S`` sets (seconds, 1 to 3600), else 30 s."""
    text = (os.environ if env is None else env).get(LEASE_ENV, "").strip()
    if not text:
        return Lease()
    try:
        value = float(text)
    except ValueError:
        raise BadLease(text=text, reason="not a number of seconds") from None
    if not math.isfinite(value) or not MIN_LEASE_S <= value <= MAX_LEASE_S:
        raise BadLease(text=text, reason=f"must be {MIN_LEASE_S:g} to {MAX_LEASE_S:g} seconds")
    return Lease(value)


def _now() -> datetime:
    return datetime.now(UTC)


def register(ws: Workspace, *, lease_s: float = LEASE_S) -> str:
    """A new instance for this process, with its lease; return its id."""
    instance = uuid.uuid4().hex
    with ws.transaction() as session:
        session.add(_this_process(instance, _now(), lease_s))
    return instance


def _this_process(instance: str, now: datetime, lease_s: float) -> ServerInstance:
    return ServerInstance(
        id=instance,
        host=socket.gethostname()[:255],
        pid=os.getpid(),
        started_at=now,
        expires_at=now + timedelta(seconds=lease_s),
    )


def renew(ws: Workspace, instance: str, *, lease_s: float = LEASE_S) -> None:
    """Extend the lease (a heartbeat); an instance reaped as expired meanwhile comes back."""
    now = _now()
    with ws.transaction() as session:
        row = session.get(ServerInstance, instance)
        if row is None:
            session.add(_this_process(instance, now, lease_s))
        else:
            row.expires_at = now + timedelta(seconds=lease_s)


def retire(ws: Workspace, instance: str) -> None:
    """The instance stopped (its own runs already marked): remove its row."""
    with ws.transaction() as session:
        session.execute(delete(ServerInstance).where(ServerInstance.id == instance))


def abandon_expired(ws: Workspace, reason: str, *, queued_reason: str | None = None) -> int:
    """Mark interrupted the unfinished runs no live instance owns, with ``reason`` (and a
    queued one, which never started, with ``queued_reason`` when given); forget expired
    instances. A run whose record waits in this home (``db.pending``) is left alone: it
    finished, and its record is written as it ended. Return how many runs were marked."""
    now = _now()
    live = select(ServerInstance.id).where(ServerInstance.expires_at >= now)
    waiting = sorted({k.record.id for k in pending.kept(ws)})
    reasons = {"running": reason, "queued": queued_reason or reason}
    marked = 0
    with ws.transaction() as session:
        for status, why in reasons.items():
            stmt = (
                update(Run)
                .where(
                    Run.status == status,
                    or_(Run.instance_id.is_(None), Run.instance_id.not_in(live)),
                    Run.id.not_in(waiting),
                )
                .values(status="interrupted", error=why, finished_at=now)
                .execution_options(synchronize_session=False)
            )
            marked += session.execute(stmt).rowcount  # type: ignore[attr-defined]
        session.execute(delete(ServerInstance).where(ServerInstance.expires_at < now))
    return int(marked)


def begin(ws: Workspace, run_id: str) -> bool:
    """Move a queued run to ``running``; False if it is no longer queued (cancelled)."""
    with ws.transaction() as session:
        result = session.execute(
            update(Run).where(Run.id == run_id, Run.status == "queued").values(status="running")
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]


def cancel_requests(ws: Workspace, instance: str) -> dict[str, str]:
    """Running runs of ``instance`` that someone asked to cancel: id -> reason."""
    stmt = select(Run.id, Run.cancel_requested).where(
        Run.instance_id == instance,
        Run.status == "running",
        Run.cancel_requested.is_not(None),
    )
    with ws.transaction() as session:
        return {run_id: reason or "cancelled" for run_id, reason in session.execute(stmt)}
