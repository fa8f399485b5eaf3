"""Recording a finished run through a database outage (decision 190).

A run that has measured keeps its result whatever the database does meanwhile: when its
record cannot be written (``DatabaseUnavailable``), the record is kept in the home
(``db.pending``), which holds its blobs against ``gc --blobs``, and writing it is retried with
bounded backoff (``db.waiting``) until the database is back; the blobs it names are touched
every ``TOUCH_EVERY_S`` meanwhile, so that a grace period measured from their time (an object
store's collector on another host) still covers them. Once written, the file goes.

A process that stops before then (a server stopped, a CLI run interrupted again) leaves the
file: ``record_left``, run by each server's start and sweeps, writes the records of dead
processes, as they would have been written, onto their runs' rows (``write_left``: never a new
row, never a run finished or still owned by a live server).

A record whose blobs wait in the home for the blob store (``evaluator.blob_wait``, decision
284) is not tried: it is kept there at once, and ``record_left`` stores its blobs before it
writes it (a store still away leaves it for the next sweep).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Collection
from pathlib import Path

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.objects import ObjectStoreUnavailable
from pinbench.db import pending
from pinbench.db.errors import DatabaseUnavailable
from pinbench.db.run_record import (
    Also,
    NotItsRecord,
    RecordNotYet,
    RunRecord,
    write,
    write_left,
)
from pinbench.db.upkeep import referenced
from pinbench.db.waiting import until_available
from pinbench.errors import PinbenchError, SystemFailure
from pinbench.worker.stop import RunStopped, Stop
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.runs")
Say = Callable[[str], None]
Attest = Callable[[Workspace, str, Say], None]
TOUCH_EVERY_S = 30.0
"""How often the blobs of a record that waits are touched (``BlobStore.touch``)."""


class Recorded(enum.Enum):
    WRITTEN = "written"
    DROPPED = "dropped"
    """Its row was finished meanwhile (by another server's sweep): kept as it was."""
    WAITING = "waiting"
    """Given up for now: the record is in ``HOME/pending``, written by the next server."""
    LOST = "lost"
    """Given up, and the home could not keep it either (a full disk)."""
    BLOBS_WAITING = "blobs waiting"
    """Its blobs wait in the home for the blob store (decision 284), and the record with
    them: written by the next server, once it has stored them."""


class RecordWaiting(SystemFailure):
    """A run finished but its record could not be written before its process was asked to
    stop: it waits in the home (``folder``), and the next server started there writes it;
    ``folder`` None: the home could not keep it either, and it is lost."""

    def __init__(
        self, *, run: str, status: str, folder: str | None, waited_for: str = "the database"
    ) -> None:
        kept = (
            f"its record is kept in {folder} and written by the next `pinbench serve` started "
            "on this home (or the sweep of one serving it now)"
            if folder
            else "its record could not be kept in the home either, and is lost"
        )
        super().__init__(
            f"run {run} {status}, but {waited_for} stayed unavailable until this process was "
            f"asked to stop: {kept}"
        )
        self.run = run
        self.status = status
        self.folder = folder
        self.waited_for = waited_for


def still_waiting(ws: Workspace, recorded: Recorded, run: str, status: str) -> None:
    """Raise ``RecordWaiting`` for a record ``record_run`` left waiting (or lost)."""
    if recorded in (Recorded.WRITTEN, Recorded.DROPPED):
        return
    folder = None if recorded is Recorded.LOST else str(pending.folder(ws))
    waited_for = "the blob store" if recorded is Recorded.BLOBS_WAITING else "the database"
    raise RecordWaiting(run=run, status=status, folder=folder, waited_for=waited_for)


def record_run(
    ws: Workspace,
    record: RunRecord,
    say: Say,
    *,
    give_up: Callable[[], bool],
    prepare: Callable[[], Also | None] | None = None,
    kept: Collection[str] = (),
) -> Recorded:
    """Write ``record``, and what ``prepare()``, called before each try and outside its
    transaction, gives to add to that transaction (``db.run_record.write``'s ``also``: the
    run's attestation); while the database is unavailable, keep it in the home and retry
    until it is written or ``give_up()`` says to stop waiting (asked after each failure).
    ``kept``: the blobs (hex) its run kept in the home (``blob_wait``); while one of them waits
    there, the record waits with it. A file there that the run did not keep holds nothing up:
    the run stored that blob itself."""

    def attempt() -> bool:
        return write(ws, record, prepare() if prepare is not None else None)

    if pending.kept_blobs(ws, [d for d in named(ws, record) if d in kept]):
        try:
            kept_at = pending.keep(ws, record)
        except OSError as exc:
            say(f"run {record.id[:8]}: its record could not be kept in the home ({exc}): lost")
            return Recorded.LOST
        say(
            f"run {record.id[:8]} {record.status}, but its blobs wait for the blob store: "
            f"its record is kept in {kept_at} with them, written once they are stored"
        )
        return Recorded.BLOBS_WAITING
    try:
        return Recorded.WRITTEN if attempt() else Recorded.DROPPED
    except DatabaseUnavailable as exc:
        unavailable = f"run {record.id[:8]} {record.status} but the database is unavailable ({exc})"
    try:
        path: Path | None = pending.keep(ws, record)
        say(f"{unavailable}: its record is kept in {path} and written once the database is back")
    except OSError as exc:  # a full disk: it waits in memory only
        path = None
        say(f"{unavailable}: its record could not be kept in the home ({exc}): it waits here")
    touched = time.monotonic()

    def refresh() -> None:
        nonlocal touched
        if time.monotonic() - touched >= TOUCH_EVERY_S:
            touch_blobs(ws, record)
            touched = time.monotonic()

    try:
        written = until_available(
            attempt,
            what=f"run {record.id[:8]}'s record",
            give_up=give_up,
            between=refresh,
        )
    except DatabaseUnavailable:
        left = f"its record waits in {path}" if path else "its record is lost"
        say(f"run {record.id[:8]}: stopped waiting for the database; {left}")
        return Recorded.WAITING if path else Recorded.LOST
    if path is not None:
        pending.drop(path)
    say(f"run {record.id[:8]} recorded {record.status} once the database was back")
    return Recorded.WRITTEN if written else Recorded.DROPPED


def stopped_from_now(stop: Stop) -> Callable[[], bool]:
    """When a record stops waiting for the database: once its process is asked to stop (a
    signal, its server stopping: ``interrupted``) after now; not for a cancel, nor for a
    stop asked before (the outcome being recorded)."""
    asked_before = stop.is_set()

    def give_up() -> bool:
        error = stop.error
        return not asked_before and isinstance(error, RunStopped) and error.status == "interrupted"

    return give_up


def touch_blobs(ws: Workspace, record: RunRecord) -> None:
    """Touch the blobs ``record`` names; a failure is logged (the record's file holds them
    for a collector on this home)."""
    for digest in named(ws, record):
        try:
            ws.store.touch(Digest(digest))
        except PinbenchError as exc:
            log.warning("run %s: could not touch blob %s: %s", record.id[:8], digest[:12], exc)


def named(ws: Workspace, record: RunRecord) -> list[str]:
    """The blobs (hex) ``record`` names."""
    return sorted(referenced([], [record.blob_fields()], [], ws.store.local))


def record_left(ws: Workspace, attest: Attest) -> int:
    """Write the records that dead processes left waiting (``db.pending.left``) and attest
    each; how many were written. A record whose row was finished meanwhile is dropped.
    ``DatabaseUnavailable`` passes: the caller tries again later."""
    written = 0
    for item in pending.left(ws):
        record = item.record
        try:
            pending.store_kept(ws, named(ws, record))  # its blobs before the row naming them
        except pending.KeptBlobLost as exc:  # a blob it names nobody has: never written
            pending.set_aside(item.path, f"not written: {exc}")
            continue
        except ObjectStoreUnavailable as exc:
            log.info("run %s: its waiting record left for now: %s", record.id[:8], exc)
            continue
        except PinbenchError as exc:  # the store refused (a full disk, access denied)
            log.warning("run %s: its waiting record's blobs not stored: %s", record.id[:8], exc)
            continue
        try:
            done = write_left(ws, record)
        except DatabaseUnavailable:
            raise
        except NotItsRecord as exc:  # never its run's: set aside, never written
            pending.set_aside(item.path, f"not written: {exc}")
            continue
        except RecordNotYet as exc:  # its server may still write it: asked again later
            log.info(
                "run %s: its waiting record %s left for now: %s", record.id[:8], item.path, exc
            )
            continue
        except PinbenchError as exc:  # the database refused this one: the others go on
            log.warning(
                "run %s: its waiting record %s not written: %s", record.id[:8], item.path, exc
            )
            continue
        pending.drop(item.path)
        if not done:
            log.warning(
                "run %s: its waiting record dropped: the run was finished meanwhile",
                record.id[:8],
            )
            continue
        written += 1
        log.warning(
            "run %s recorded %s from the record its process left waiting (%s)",
            record.id[:8],
            record.status,
            item.path.name,
        )
        try:
            attest(ws, record.id, lambda text: log.info("%s", text))
        except PinbenchError as exc:
            log.warning(
                "run %s is recorded but not attested (%s): `pinbench runs attest %s`",
                record.id[:8],
                exc,
                record.id,
            )
    return written
