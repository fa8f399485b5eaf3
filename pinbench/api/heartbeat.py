"""A run pool's heartbeat: its server instance's lease, the sweep of dead servers' runs, and
cancel requests made through any server.

Each pool is a server instance (``pinbench.evaluator.instances``): its runs name it, and a
heartbeat thread renews its lease and picks up cancel requests for its running runs. A
starting pool, and the heartbeat every ``Lease.sweep_s`` while it serves, marks interrupted
only runs whose instance's lease has expired (a server killed outright), and removes the
scratch of dead processes; so with several server processes (or servers) on one database
each only ever touches its own runs, and none stays ``running`` after its server died.
Before marking, a sweep writes the records that dead processes left waiting for the database
(``evaluator.records.recording``): those runs finished, and are recorded as they ended.

A database that was away stopped every server's renewals alike: a lease that lapsed then says
nothing about its server. After an outage the heartbeat renews at once and sweeps only a full
lease later, when every live server has renewed (decision 190).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

from pinbench.db.errors import DatabaseUnavailable
from pinbench.evaluator import instances
from pinbench.evaluator.run import record_left
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.api.runs")
HEARTBEAT_S = 1.0
"""How often the heartbeat thread looks for cancel requests (it renews the lease and sweeps
expired ones less often, ``instances.Lease``)."""


class Beating(Protocol):
    """What the heartbeat needs of a run pool."""

    ws: Workspace
    instance: str
    lease: instances.Lease

    def counts(self) -> tuple[int, int]: ...

    def stop_run(self, run_id: str, reason: str) -> bool: ...


def sweep(ws: Workspace, stopped: str, not_started: str) -> None:
    """Write the records dead processes left waiting; mark interrupted the runs of servers
    whose lease expired (killed, or stalled past it), ``stopped`` the reason for a running run
    and ``not_started`` for a queued one; remove the scratch dead processes left (never a live
    one's)."""
    from pinbench.artifacts.scratch import reclaim_each

    recorded = record_left(ws)
    if recorded:
        log.warning("recorded %d run(s) whose records waited for the database", recorded)
    abandoned = instances.abandon_expired(ws, stopped, queued_reason=not_started)
    if abandoned:
        log.warning("marked %d run(s) of stopped servers interrupted", abandoned)
    reclaim_each(ws.store.scratch_folders())


class Heartbeat(threading.Thread):
    """A pool's heartbeat thread (``beat``) and when it last beat (``at``, wall time): the
    age ``/metrics`` counts a worker live by (``pinbench_server_workers``)."""

    def __init__(self, pool: Beating, quit: threading.Event, stopped: str, not_started: str):
        super().__init__(name="pinbench-heartbeat", daemon=True)
        self.pool, self.quit, self.reasons = pool, quit, (stopped, not_started)
        self.at = time.time()

    def run(self) -> None:
        beat(self.pool, self.quit, *self.reasons, pulse=self)

    def live(self) -> bool:
        """Beaten within a lease: the age past which other servers take this one for gone
        (its lease, renewed by these beats, expires) and mark its runs interrupted."""
        return time.time() - self.at < self.pool.lease.lease_s


def beat(
    pool: Beating,
    quit: threading.Event,
    stopped: str,
    not_started: str,
    pulse: Heartbeat | None = None,
) -> None:
    """Until ``quit``: renew the lease; sweep expired ones (``sweep``: their runs marked
    with these reasons); stop the runs someone asked (through any server) to cancel. Each
    beat, whether the database answered or not, sets ``pulse.at``."""
    lease = pool.lease
    renewed = swept = time.monotonic()  # registering and sweeping were just done
    away = False
    while not quit.wait(min(HEARTBEAT_S, lease.renew_s)):
        if pulse is not None:
            pulse.at = time.time()
        try:
            if away or time.monotonic() - renewed >= lease.renew_s:
                instances.renew(pool.ws, pool.instance, lease_s=lease.lease_s)
                renewed = time.monotonic()
                if away:  # back: sweep once every live server has renewed
                    away, swept = False, renewed + lease.lease_s - lease.sweep_s
            if time.monotonic() - swept >= lease.sweep_s:
                sweep(pool.ws, stopped, not_started)
                swept = time.monotonic()
            if pool.counts()[1]:  # runs running here
                for run_id, why in instances.cancel_requests(pool.ws, pool.instance).items():
                    pool.stop_run(run_id, why)
        except DatabaseUnavailable as exc:  # one line, not a traceback a second (decision 145)
            away = True
            log.warning("heartbeat of server instance %s failed: %s", pool.instance[:8], exc)
        except Exception:  # anything else: its traceback (repeats held back: api/logs)
            log.exception("heartbeat of server instance %s failed", pool.instance[:8])
