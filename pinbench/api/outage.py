"""A run pool while its database is away (decision 190): a queued run waits to start, a failed
run's mark waits, and what a pool that stops cannot mark is left, runs and reasons, to the
next server to start on the database (``heartbeat.sweep``, ``Admin.prepare_to_serve``), which
marks them once this pool's lease has run out. A finished run's record waits on its own
(``evaluator.records.recording``)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping

from pinbench.db.errors import DatabaseUnavailable
from pinbench.db.waiting import until_available
from pinbench.evaluator import instances
from pinbench.evaluator.run import abandon_unfinished
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.api.runs")
LATER = "the next server to start marks them, once this one's lease has run out"


STOPPED = "the server stopped before this run finished"
NOT_STARTED = "the server stopped before this run started: submit it again"
DRAINED = "the server was stopping (SIGTERM) before this run started: submit it again"
"""The reasons a stopping server marks its runs ``interrupted`` with."""


def drain_ran_out(drain_s: float) -> str:
    """The reason a run still running when a drain's ``--drain-seconds`` ran out is stopped
    with."""
    return (
        f"the server was stopping (SIGTERM) and this run was still running after the "
        f"{drain_s:g} s it waits (--drain-seconds): submit it again"
    )


def begin(ws: Workspace, run_id: str, *, give_up: Callable[[], bool]) -> bool:
    """Move a queued run to ``running`` (``instances.begin``), waiting while the database is
    away; False when it was cancelled, or ``give_up()`` ended the wait (it stays queued)."""
    try:
        return until_available(
            lambda: instances.begin(ws, run_id), what=f"run {run_id[:8]} (queued)", give_up=give_up
        )
    except DatabaseUnavailable:
        return False


def mark(
    ws: Workspace, run_id: str, reason: str, status: str, *, give_up: Callable[[], bool]
) -> None:
    """Mark an unfinished run ``status`` with ``reason`` (``abandon_unfinished``), waiting
    while the database is away, unless ``give_up()`` ends the wait."""
    with contextlib.suppress(DatabaseUnavailable):  # said by until_available
        until_available(
            lambda: abandon_unfinished(ws, reason, only=[run_id], status=status),
            what=f"run {run_id[:8]}'s {status} mark",
            give_up=give_up,
        )


def mark_left(ws: Workspace, runs: Mapping[str, set[str]], instance: str) -> None:
    """A stopping pool's last writes: its runs left unfinished marked interrupted (``runs``:
    reason -> run ids), its instance retired; with the database away, both are left."""
    try:
        for reason, ids in runs.items():
            if ids:
                abandon_unfinished(ws, reason, only=sorted(ids))
        instances.retire(ws, instance)
    except DatabaseUnavailable as exc:
        left = sum(map(len, runs.values()))
        log.warning(
            "stopping with the database unavailable (%s): %d run(s) left: %s", exc, left, LATER
        )


def mark_drained(ws: Workspace, queued: list[str], reason: str) -> int:
    """Mark the queued runs of a pool that drains; with the database away they are left."""
    if not queued:
        return 0
    try:
        return abandon_unfinished(ws, reason, only=queued)
    except DatabaseUnavailable as exc:
        log.warning(
            "draining with the database unavailable (%s): %d queued run(s) left: %s",
            exc,
            len(queued),
            LATER,
        )
        return 0
