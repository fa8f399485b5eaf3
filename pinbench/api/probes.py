"""Readiness (``/api/v1/ready``) and metrics (``/metrics``): what an operator's probes and
Prometheus ask a server.

Liveness (``/api/v1/health``, in ``app``) only says the process answers. Readiness checks what
serving needs: the database answers ``SELECT 1`` within ``DB_TIMEOUT_S``, the blob store takes
a file (written and removed in its scratch), and each disk it writes to (the blobs', the
home's, the SQLite file's) has ``ready_min_free_mb`` free; on
S3 the bucket takes a write (a tiny object put and deleted), on SQLite the file is still the one
opened (``readiness``). A failed
check answers 503 naming each check and its cause; causes name no host, path or credential
(the full error goes to the server's log), so the probe can stay open to anyone.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread
import msgspec
from litestar import Request, Response, get
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy import func, select, text

from pinbench.api.deps import ServerSettings
from pinbench.api.metrics_auth import metrics_principal
from pinbench.api.observe import DRAINING, note_refused
from pinbench.api.readiness import (
    Checked,
    OneAtATime,
    database_file_check,
    free_space_check,
    object_store_check,
    written_folders,
)
from pinbench.artifacts.s3store import S3BlobStore
from pinbench.db.models import Run

if TYPE_CHECKING:
    from litestar.datastructures import State

    from pinbench.api.observe import RequestStats
    from pinbench.api.runpool import RunPool
    from pinbench.db.identity import OpenedFile
    from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.api.probes")

DB_TIMEOUT_S: Final = 2.0
"""How long readiness (and a scrape's count of runs) waits for the database."""
BLOB_SCAN_S: Final = 300.0
"""How old the blob store's size may get before a scrape starts a new count (in a thread;
the scrape answers with the last one)."""
METRICS_TYPE: Final = "text/plain; version=0.0.4"
"""Prometheus text format; Litestar adds ``charset=utf-8``."""


class Readiness(msgspec.Struct, frozen=True):
    status: str
    """``ready`` or ``not ready``."""
    checks: list[Checked]


def _select_one(ws: Workspace) -> None:
    with ws.engine.connect() as conn:
        conn.execute(text("SELECT 1"))


async def database_check(ws: Workspace, once: OneAtATime) -> Checked:
    try:
        await once.call(lambda: _select_one(ws), DB_TIMEOUT_S)
    except TimeoutError as exc:
        return Checked("database", False, str(exc))
    except Exception as exc:
        log.warning("readiness: the database failed: %s", exc)
        return Checked("database", False, f"unreachable ({type(exc).__name__})")
    return Checked("database", True)


def blob_store_check(ws: Workspace) -> Checked:
    """Write one byte where the store stages what it takes (on the blobs' filesystem) and
    remove it."""
    try:
        path = ws.store.staging() / f"ready-{os.getpid()}-{uuid.uuid4().hex}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"r")
        finally:
            os.close(fd)
            path.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("readiness: the blob store is not writable: %s", exc)
        name = errno.errorcode.get(exc.errno or 0, "error")
        return Checked("blob_store", False, f"not writable: {exc.strerror} ({name})")
    return Checked("blob_store", True)


@get(
    "/api/v1/ready",
    operation_id="ready",
    summary="Readiness: the database answers, the blob store is writable, its disks have room",
    description="200 when every check passes, else 503; the body names each check and, when "
    "it failed, its cause: the database, the blob store's scratch, free space on each disk "
    "it writes to (named blobs, home or database); on S3 the "
    "bucket taking a write (object_store: a tiny object put under ready/ and deleted), on "
    "SQLite its file (database_file). Open to anyone: it names no "
    "host, path or credential.",
    security=[],
    responses={503: ResponseSpec(Readiness, description="Not ready: a check failed")},
)
async def ready(state: State, request: Request[Any, Any, Any]) -> Response[Readiness]:
    ws: Workspace = state.ws
    settings: ServerSettings = state.settings
    checks = [await database_check(ws, state.db_ready)]
    opened: OpenedFile | None = state.db_file
    if opened is not None:  # SQLite: still the file this server opened
        checks.append(await database_file_check(opened))
    checks.append(await anyio.to_thread.run_sync(blob_store_check, ws))
    if isinstance(ws.store, S3BlobStore):  # the bucket holds the blobs: does it take one?
        checks.append(await object_store_check(ws.store, state.s3_ready))
    folders = written_folders(ws)
    checks.append(
        await anyio.to_thread.run_sync(free_space_check, folders, settings.ready_min_free_mb)
    )
    pool: RunPool = state.pool
    if pool.draining.is_set():  # SIGTERM: it finishes its runs and takes no new one
        checks.append(Checked("runs", False, "draining: the server is stopping"))
    ok = all(c.ok for c in checks)
    if [c.name for c in checks if not c.ok] == ["runs"]:  # draining alone: expected, no error
        note_refused(request.scope.setdefault("state", {}), DRAINING)
    body = Readiness(status="ready" if ok else "not ready", checks=checks)
    return Response(body, status_code=200 if ok else 503)


class BlobScan:
    """The blob store's size, counted in a thread at most every ``BLOB_SCAN_S``."""

    def __init__(self) -> None:
        self.blobs: int | None = None
        self.bytes: int | None = None
        self.at: float | None = None
        """When the last count finished (``time.time()``)."""
        self._running = threading.Lock()

    def refresh(self, ws: Workspace) -> None:
        """Start a count unless one runs or the last is recent."""
        if self.at is not None and time.time() - self.at < BLOB_SCAN_S:
            return
        if self._running.acquire(blocking=False):
            threading.Thread(target=self._count, args=(ws,), daemon=True).start()

    def _count(self, ws: Workspace) -> None:
        try:
            count = size = 0
            for entry in _files(ws.store.blobs):
                count += 1
                size += entry
            self.blobs, self.bytes, self.at = count, size, time.time()
        except OSError as exc:
            log.warning("metrics: cannot count the blob store: %s", exc)
        finally:
            self._running.release()


def _files(root: Path) -> Iterator[int]:
    """The size of each file in the store's ``blobs/XX/`` folders."""
    if not root.is_dir():
        return
    with os.scandir(root) as subs:
        for sub in subs:
            if sub.is_dir(follow_symlinks=False):
                with os.scandir(sub.path) as blobs:
                    for blob in blobs:
                        if blob.is_file(follow_symlinks=False):
                            yield blob.stat(follow_symlinks=False).st_size


def _runs_by_status(ws: Workspace) -> dict[str, int]:
    with ws.transaction() as session:
        rows = session.execute(select(Run.status, func.count()).group_by(Run.status)).all()
    return {status: int(n) for status, n in rows}


def _alerts(ws: Workspace) -> list[str]:
    """Alerts by state (a gauge: acknowledging moves one) and by kind (a counter: alerts are
    never deleted), every state and kind present (decision 253)."""
    from pinbench.series.alerts import counts

    by_state, by_kind = counts(ws)
    out = _gauge(
        "pinbench_alerts",
        "Alerts (regressions, change points) in the database, by state.",
        [(f'{{state="{s}"}}', n) for s, n in by_state.items()],
    )
    out += [
        "# HELP pinbench_alerts_total Alerts ever raised (never deleted), by kind.",
        "# TYPE pinbench_alerts_total counter",
        *(f'pinbench_alerts_total{{kind="{k}"}} {n}' for k, n in by_kind.items()),
    ]
    return out


def _gauge(name: str, help_text: str, values: list[tuple[str, float]]) -> list[str]:
    out = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    out += [f"{name}{labels} {value:.17g}" for labels, value in values]
    return out


@get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics (text exposition format 0.0.4)",
    description="Needs the `read` scope (which every caller has when reads are public). "
    "Requests by route template and status, latency histograms, the run queue, runs by "
    "status, the blob store's size and the database connection pool. Answered while the "
    "database is down (pinbench_database_up 0): a token the database accepted for /metrics "
    "within a day is let in then.",
    media_type=METRICS_TYPE,
)
async def metrics(state: State, request: Request[Any, Any, Any]) -> Response[str]:
    principal = await metrics_principal(request, state)  # the database may be down
    principal.require("read")
    from pinbench.api.observe import render
    from pinbench.api.worker_metrics import Snapshot, alive, beating, read

    ws: Workspace = state.ws
    scan: BlobScan = state.blob_scan
    snaps = [Snapshot(os.getpid(), own_numbers(state))]  # this worker's, from memory
    writer = getattr(state, "metrics_writer", None)
    if writer is not None:  # --workers N: the others' snapshots
        snaps += await anyio.to_thread.run_sync(read, writer.folder)
    lines = render([s.numbers.get("requests", {}) for s in snaps])
    now = time.time()  # live: its process exists and its heartbeat beat within the lease
    live = [
        s.numbers
        for s in snaps
        if (s.pid == os.getpid() or alive(s.pid)) and beating(s.numbers, now)
    ]
    pools = [n["pool"] for n in live if isinstance(n.get("pool"), list)]
    lines += _gauge(
        "pinbench_run_pool_runs",
        "Runs the server's processes hold, queued or running.",
        [
            ('{state="queued"}', sum(int(p[0]) for p in pools)),
            ('{state="running"}', sum(int(p[1]) for p in pools)),
        ],
    )
    lines += _gauge(
        "pinbench_run_pool_capacity",
        "Runs the server takes at once (--run-workers + --run-queue, times --workers).",
        [("", sum(int(p[2]) for p in pools))],
    )
    lines += _gauge(
        "pinbench_server_workers",
        "Server processes alive whose heartbeat beat within the lease.",
        [("", len(live))],
    )
    try:
        runs = await state.db_scrape.call(lambda: _runs_by_status(ws), DB_TIMEOUT_S)
    except Exception as exc:  # the scrape still answers; pinbench_database_up says why not
        log.warning("metrics: cannot count runs: %s", exc)
        runs = None
    lines += _gauge(
        "pinbench_database_up",
        "1 if this scrape could count runs in the database.",
        [("", 0 if runs is None else 1)],
    )
    if runs is not None:
        lines += _gauge(
            "pinbench_runs",
            "Runs recorded in the database (all servers), by status.",
            [(f'{{status="{s}"}}', n) for s, n in sorted(runs.items())],
        )
        try:
            lines += await state.db_scrape.call(lambda: _alerts(ws), DB_TIMEOUT_S)
        except Exception as exc:
            log.warning("metrics: cannot count alerts: %s", exc)
    scan.refresh(ws)
    if scan.at is not None and scan.blobs is not None and scan.bytes is not None:
        lines += _gauge("pinbench_blob_store_blobs", "Files in the blob store.", [("", scan.blobs)])
        lines += _gauge("pinbench_blob_store_bytes", "Bytes in the blob store.", [("", scan.bytes)])
        lines += _gauge(
            "pinbench_blob_store_counted_timestamp_seconds",
            f"When the blob store was last counted (at most every {BLOB_SCAN_S:.0f} s).",
            [("", scan.at)],
        )
    dbs = [n["db_pool"] for n in live if isinstance(n.get("db_pool"), list)]
    if dbs:
        lines += _gauge(
            "pinbench_db_pool_checked_out",
            "Database connections in use (SQLAlchemy pools of the server's processes).",
            [("", sum(int(d[0]) for d in dbs))],
        )
        lines += _gauge(
            "pinbench_db_pool_size",
            "Database connections the pools keep.",
            [("", sum(int(d[1]) for d in dbs))],
        )
    return Response("\n".join(lines) + "\n", media_type=METRICS_TYPE)


def own_numbers(state: State) -> dict[str, Any]:
    """This worker process's share of ``/metrics``: its request counts, its run pool's
    queued, running and capacity, its database pool's connections in use and size, when its
    run pool's heartbeat last beat (``beat``, wall time) and its lease (``lease_s``)."""
    ws: Workspace = state.ws
    pool: RunPool = state.pool
    stats: RequestStats = state.requests
    queued, running = pool.counts()
    db_pool: Any = ws.engine.pool
    has_db_pool = hasattr(db_pool, "checkedout") and hasattr(db_pool, "size")
    return {
        "requests": stats.snapshot(),
        "pool": [queued, running, pool.capacity],
        "db_pool": [db_pool.checkedout(), db_pool.size()] if has_db_pool else None,
        "beat": pool.heartbeat.at,
        "lease_s": pool.lease.lease_s,
    }
