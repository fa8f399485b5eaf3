"""Readiness checks: what each says (``Checked``), how one that may hang is waited for
(``OneAtATime``), and the checks of what a server depends on beyond its database's answer
and its disk (those are in ``probes``): the object store's bucket, the SQLite file it opened.

- ``object_store``: a blob store on S3 (``PINBENCH_BLOBS=s3://...``) keeps every blob in its
  bucket, so a server whose bucket does not answer, or refuses writes (its disk full, read-only,
  over its quota), cannot publish or serve a blob. The check writes: it HEADs the bucket, puts a
  tiny object under the reserved ``ready/`` prefix and deletes it (``S3BlobStore.probe_writes``,
  each call tried once), waiting at most ``READY_TIMEOUT_S``; a versioned bucket keeps each
  probe's versions (a lifecycle rule on ``ready/`` expires them).
- ``database_file``: the SQLite file the server opened is still the one at its path (device
  and inode, ``db/identity.py``).
- ``free_space``: each filesystem the server writes to has ``ready_min_free_mb`` free: the one
  the blobs are written to (``HOME/blobs``, which may be a mount of its own, and where an
  upload is staged), the home's (scratch, runs kept for a store that was away) and the SQLite
  file's folder; a short one is named by what it holds (``blobs``, ``home``, ``database``),
  those sharing one disk together.

Each cause names no host, bucket, path or credential; the full error goes to the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

import anyio.to_thread
import msgspec

if TYPE_CHECKING:
    from pinbench.artifacts.s3store import S3BlobStore
    from pinbench.db.identity import OpenedFile
    from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.api.probes")
T = TypeVar("T")

READY_TIMEOUT_S: Final = 2.0
"""How long readiness waits for the object store's answer."""


class Checked(msgspec.Struct, frozen=True):
    name: str
    ok: bool
    cause: str | None = None


class OneAtATime:
    """Runs a blocking call (the database's, the bucket's) in a thread of its own and waits
    for it at most a given time; while one call is still in flight (a hung connection) the
    next is refused at once, so probes and scrapes never pile threads up behind a database or
    an object store that does not answer."""

    def __init__(self) -> None:
        self._busy = threading.Lock()

    async def call(self, fn: Callable[[], T], timeout_s: float) -> T:
        """``fn()``'s result or exception; TimeoutError when it takes longer than
        ``timeout_s`` or an earlier call is still in flight."""
        if not self._busy.acquire(blocking=False):
            raise TimeoutError(f"an earlier call still waits (> {timeout_s} s)")
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[T] = loop.create_future()

        def settle(value: T | None, exc: BaseException | None) -> None:
            if answer.done():  # the caller gave up waiting
                return
            if exc is not None:
                answer.set_exception(exc)
            else:
                answer.set_result(value)  # type: ignore[arg-type]

        def work() -> None:
            value: T | None = None
            error: BaseException | None = None
            try:
                value = fn()
            except BaseException as exc:
                error = exc
            finally:
                self._busy.release()
            with contextlib.suppress(RuntimeError):  # the server stopped meanwhile
                loop.call_soon_threadsafe(settle, value, error)

        threading.Thread(target=work, name="pinbench-probe", daemon=True).start()
        try:
            return await asyncio.wait_for(answer, timeout_s)
        except TimeoutError:
            raise TimeoutError(f"no answer within {timeout_s} s") from None


async def object_store_check(store: S3BlobStore, once: OneAtATime) -> Checked:
    try:
        failed = await once.call(store.probe_writes, READY_TIMEOUT_S)
    except TimeoutError as exc:
        log.warning("readiness: the object store does not answer: %s", exc)
        return Checked("object_store", False, str(exc))
    if failed is not None:
        log.warning("readiness: the object store failed: %s", failed.full)
        return Checked("object_store", False, failed.cause)
    return Checked("object_store", True)


async def database_file_check(opened: OpenedFile) -> Checked:
    problem = await anyio.to_thread.run_sync(opened.problem)
    if problem is not None:
        log.warning("readiness: %s (%s)", problem, opened.path)
        return Checked("database_file", False, problem)
    return Checked("database_file", True)


def written_folders(ws: Workspace) -> dict[str, Path]:
    """Where the server writes, by what it holds: ``blobs`` first (what a publish fills)."""
    from pinbench.db.plain import sqlite_file

    folders = {"blobs": ws.store.blobs, "home": ws.settings.home}
    database = sqlite_file(ws.settings.database_url)
    if database is not None:
        folders["database"] = database.parent
    return folders


def free_space_check(folders: dict[str, Path], min_free_mb: int) -> Checked:
    """Each distinct filesystem among ``folders`` has ``min_free_mb`` free; the cause names
    each short one by what it holds and its free space."""
    disks: dict[int, tuple[list[str], int]] = {}
    for name, folder in folders.items():
        try:
            st = os.statvfs(folder)
            device = os.stat(folder).st_dev
        except OSError as exc:
            log.warning("readiness: cannot read the free space of %s: %s", folder, exc)
            return Checked("free_space", False, f"{name}: cannot be read: {exc.strerror}")
        names, _ = disks.setdefault(device, ([], st.f_bavail * st.f_frsize))
        names.append(name)
    short = [
        f"{', '.join(names)}: {_size(free)} free, below {min_free_mb} MiB"
        for names, free in disks.values()
        if free < min_free_mb * 1024 * 1024
    ]
    if short:
        return Checked("free_space", False, "; ".join(short))
    return Checked("free_space", True)


def _size(free: int) -> str:
    return f"{free // 1024} KiB" if free < 1024 * 1024 else f"{free // (1024 * 1024)} MiB"
