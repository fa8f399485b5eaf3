"""A run's blobs through a blob-store outage (decision 284).

A run that has measured keeps what it measured whatever the blob store does meanwhile, as its
record does through a database outage (``records.recording``): each blob it stores (its raw
latencies, trace, outputs, weights, token and post-processing times, optimized graph, the
attestation's results and envelope) is put through ``waiting_put``, which retries while the
object store is away (``ObjectStoreUnavailable``: no connection, a timeout, an HTTP 5xx) with
the database's backoff (``db.waiting``), said in the log and in the run's progress, until the
store takes it. A store that refuses (access denied, no bucket) is not waited for.

When the process is asked to stop while it waits (a server stopping, a signal; asked during a
try, too: ``_tried``), the blob's
bytes are kept in the home (``db.pending.keep_blob``) and the run's record waits with them
(``recording.record_run``): the next server started on the home stores them, then writes the
record (``recording.record_left``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.objects import ObjectStoreUnavailable
from pinbench.db import pending
from pinbench.db.waiting import until_available
from pinbench.evaluator.records.run_blobs import Put
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.job import Say
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace

OF = "the blob store"
POLL_S = 0.25
"""How often a try under way is asked whether to give up."""
T = TypeVar("T")


def waiting_put(
    ws: Workspace,
    run_id: str,
    say: Callable[[str], None],
    *,
    give_up: Callable[[], bool],
    keep: bool = True,
    kept: set[str] | None = None,
) -> Put:
    """``ws.store.put_bytes`` for run ``run_id``'s blobs, waiting out an object store's outage
    until it takes them or ``give_up()`` (asked after each failed try) says to stop waiting:
    then the bytes are kept in ``HOME/pending/blobs`` and their digest returned all the same
    (``keep``), or the outage raised (not ``keep``: the attestation's blobs, whose run is
    attested later, ``runs attest`` or the next server's ``record_left``). The digests (hex)
    kept are added to ``kept``: the run's record waits for those, and for no other file the
    folder holds (another run's, or one put there by another hand)."""

    def put(data: bytes) -> Digest:
        what = f"run {run_id[:8]}'s blob of {len(data):,} bytes"
        try:
            return until_available(
                lambda: _tried(lambda: ws.store.put_bytes(data), give_up),
                what=what,
                outage=ObjectStoreUnavailable,
                of=OF,
                give_up=give_up,
                say=say,
            )
        except ObjectStoreUnavailable:
            if not keep:
                raise
            digest = pending.keep_blob(ws, data)
            if kept is not None:
                kept.add(digest.hex)
            say(
                f"{what} ({digest.hex[:12]}) kept in {pending.folder(ws) / pending.BLOBS}: "
                "stored, and its run recorded, by the next server started on this home"
            )
            return digest

    return put


def _tried(call: Callable[[], T], give_up: Callable[[], bool]) -> T:
    """``call()`` on a thread of its own, its caller asking ``give_up`` as it waits: one try
    of a store that accepts a connection and never answers lasts its client's timeouts and
    retries (minutes), longer than a stopping server gives its runs, which would then be
    marked interrupted with their measurements lost. Given up, the try is left to end alone
    (what it stores is addressed by its bytes: harmless) and the bytes are kept (decision
    285)."""
    done = threading.Event()
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="blob-put", daemon=True).start()
    while not done.wait(POLL_S):
        if give_up():
            raise ObjectStoreUnavailable(
                where=OF, action="a put", reason="asked to stop while a try was under way"
            )
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def verify_waiting(
    ws: Workspace, lock: Lockfile, fetch: bool, run_id: str, say: Say, stop: Stop
) -> None:
    """``verify_lockfile`` for the run, waiting out an object store that cannot be reached as
    the run's blobs do (decision 284; issue 72, item 4: it was recorded as pinned items that
    failed verification), until the run is asked to stop."""
    from pinbench.registry.verify import verify_lockfile  # the registry's, on the run's path

    try:
        until_available(
            lambda: verify_lockfile(ws, lock, fetch=fetch, for_run=True),
            what=f"run {run_id[:8]}'s pinned files",
            outage=ObjectStoreUnavailable,
            of="the blob store",
            give_up=stop.is_set,
            say=say,
        )
    except ObjectStoreUnavailable:
        stop.check()  # a stop asked while it waited is the run's outcome
        raise
