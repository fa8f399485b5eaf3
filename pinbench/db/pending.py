"""Run records waiting for the database, kept in the home (decision 190).

A run that has finished but whose record the database cannot take (it is away) keeps the
record here, ``HOME/pending/OWNER-RUNID.json``, until it is written: its process retries
(``evaluator.records.recording``) and removes the file once the row is written. ``OWNER`` is the
process's scratch owner (``artifacts.scratch``), whose lock it holds while it lives: a record
whose owner is dead (the server was stopped or killed while the database was away) is written
by the next server that starts on the home, or by a live server's sweep
(``evaluator.records.recording.record_left``), never while its own process still tries.

A file there is read as data from a process that may not be pinbench's (anything running as the
service user can write the folder; decision 190, amended): only a regular file, opened without
following a link, of at most ``MAX_RECORD_BYTES``, holding a record whose status is a finished
one and whose results are numbers, is a record; anything else is set aside in
``HOME/pending/refused`` and said in the log. Who may write a record is checked against its row
(``db.run_record.write_left``).

The blobs such a record names count as referenced for ``fsck`` and ``gc --blobs``
(``db.upkeep``) however long it waits, whatever the grace period.

A run whose blobs the blob store could not take before its process was asked to stop (an
object store away, decision 284) keeps their bytes here too, ``HOME/pending/blobs/HEX``
(``keep_blob``), and its record with them: the record is written only once they are stored
(``store_kept``, before ``write_left``), each hashed again on the way.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.scratch import owner_alive, owner_of
from pinbench.artifacts.store import StagedBlob
from pinbench.artifacts.store_errors import ChecksumMismatch
from pinbench.db.run_record import BadRecord, RunRecord
from pinbench.errors import SystemFailure

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.db")
FOLDER = "pending"
REFUSED = "refused"
BLOBS = "blobs"
"""The sub-folder holding the bytes of run blobs the blob store could not take (decision 284)."""
"""The sub-folder where files that are not records pinbench can write are set aside."""
MAX_RECORD_BYTES = 64 * 1024 * 1024
"""The largest record file read (a run's record is its row and metrics: kilobytes)."""
_NAME = re.compile(r"([0-9a-f]{16})-([0-9A-Za-z-]{1,64})\.json")


@dataclass(frozen=True, slots=True)
class Kept:
    """A record in the folder: its file, the owner that wrote it, the record."""

    path: Path
    owner: str
    record: RunRecord


def folder(ws: Workspace) -> Path:
    return ws.settings.home / FOLDER


def keep(ws: Workspace, record: RunRecord) -> Path:
    """Write ``record`` to the folder (a temporary name, fsync, rename); its path."""
    where = folder(ws)
    where.mkdir(parents=True, exist_ok=True)
    owner = owner_of(ws.store.tmp)
    path = where / f"{owner}-{record.id}.json"
    _write(path, json.dumps(record.to_json(), sort_keys=True).encode())
    return path


def _write(path: Path, data: bytes) -> None:
    """``data`` as ``path``, whole: a temporary name beside it, fsync, rename."""
    temp = path.with_name(f".{path.name}.new")
    fd = os.open(temp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def keep_blob(ws: Workspace, data: bytes) -> Digest:
    """Keep a run blob's bytes in ``HOME/pending/blobs`` until the store takes them; its
    digest (the name it is kept under)."""
    digest = Digest.of_bytes(data)
    where = folder(ws) / BLOBS
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write(where / digest.hex, data)
    return digest


def kept_blobs(ws: Workspace, digests: list[str]) -> list[str]:
    """Those of ``digests`` (hex) whose bytes wait here for the store (a regular file each)."""
    where = folder(ws) / BLOBS
    return [d for d in digests if _plain(where / d)] if where.is_dir() else []


def _plain(path: Path) -> bool:
    """A regular file, not followed through a link (a FIFO is never waited on)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class KeptBlobLost(SystemFailure):
    """A blob a waiting record names is neither in the store nor kept here as its bytes: the
    record cannot be written (its row would name a blob nobody has)."""

    def __init__(self, *, digest: str, reason: str) -> None:
        super().__init__(f"kept blob {digest[:12]}: {reason}, and the store lacks it")
        self.digest = digest
        self.reason = reason


def store_kept(ws: Workspace, digests: list[str]) -> int:
    """Put the kept bytes of ``digests`` into the store (read without following a link or
    waiting on a FIFO, hashed against their name), removing each kept file once stored; how
    many were stored. A kept file that is not its blob's bytes is set aside in
    ``blobs/refused`` and held up nothing if the store has that blob already (another run
    stored it); else ``KeptBlobLost``. The store's errors pass (an outage: the record waits
    on)."""
    stored = 0
    for hex_digest in kept_blobs(ws, digests):
        path = folder(ws) / BLOBS / hex_digest
        digest = Digest(hex_digest)
        try:
            staged = _stage_kept(ws, path, digest)
        except FileNotFoundError:  # stored meanwhile by another sweep, and removed
            staged = None
        except (OSError, ChecksumMismatch) as exc:
            set_aside(path, f"not the bytes of blob {hex_digest[:12]} ({exc})")
            if not ws.store.has(digest):
                why = f"its kept file was refused ({exc})"
                raise KeptBlobLost(digest=hex_digest, reason=why) from None
            continue
        if staged is None:
            if not ws.store.has(digest):
                raise KeptBlobLost(digest=hex_digest, reason="its kept file is gone")
            continue
        with ws.store.locked():
            ws.store.commit(staged)
        path.unlink(missing_ok=True)
        stored += 1
    return stored


def _stage_kept(ws: Workspace, path: Path, digest: Digest) -> StagedBlob:
    """The kept file ``path`` staged in the store, hashed: a regular file opened without
    following a link, never a FIFO waited on; ``ChecksumMismatch`` for other bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb", buffering=0) as source:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        writer = ws.store.writer()
        try:
            while chunk := source.read(1 << 20):
                writer.write(chunk)
        except BaseException:
            writer.abort()
            raise
        return writer.finish(label=f"kept run blob {path}", expected=digest, size=None)


def drop(path: Path) -> None:
    """The record was written (or is no longer wanted): its file goes."""
    path.unlink(missing_ok=True)


def kept(ws: Workspace) -> Iterator[Kept]:
    """Every record in the folder, in name order. A file that is not one (not a regular file,
    too large, not a record) is set aside (``set_aside``), said in the log (``fsck`` reports
    the blobs it would have held as unreferenced)."""
    where = folder(ws)
    if not where.is_dir():
        return
    for path in sorted(where.iterdir()):
        named = _NAME.fullmatch(path.name)
        if named is None:
            continue
        try:
            record = RunRecord.from_json(json.loads(read_record(path)))
        except FileNotFoundError:  # written meanwhile, and removed
            continue
        except (OSError, ValueError, BadRecord) as exc:
            set_aside(path, f"not a run record pinbench can write ({exc})")
            continue
        if record.id == named.group(2):
            yield Kept(path, named.group(1), record)
        else:
            set_aside(path, f"it holds the record of run {record.id[:36]!r}, not its name's")


def read_record(path: Path) -> bytes:
    """The bytes of record file ``path``: a regular file (never a link followed, nor a FIFO
    or a device waited on) of at most ``MAX_RECORD_BYTES``; ``OSError`` or ``BadRecord``
    otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadRecord("not a regular file")
        if info.st_size > MAX_RECORD_BYTES:
            raise BadRecord(f"{info.st_size} bytes, over the {MAX_RECORD_BYTES} a record may be")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_RECORD_BYTES:  # grown since fstat
                raise BadRecord(f"over the {MAX_RECORD_BYTES} bytes a record may be")
        return b"".join(chunks)
    finally:
        os.close(fd)


def set_aside(path: Path, why: str) -> None:
    """Move ``path`` (never followed) to ``HOME/pending/refused``, saying ``why`` in the log;
    left where it is if it cannot be moved (said too)."""
    aside = path.parent / REFUSED
    try:
        aside.mkdir(mode=0o700, exist_ok=True)
        os.replace(path, aside / path.name)
    except FileNotFoundError:
        return  # removed meanwhile
    except OSError as exc:
        log.warning("%s: %s; it could not be set aside (%s): left alone", path, why, exc)
        return
    log.warning("%s: %s; set aside in %s", path, why, aside)


def left(ws: Workspace) -> list[Kept]:
    """The records whose process is dead: nobody is trying to write them."""
    return [k for k in kept(ws) if not owner_alive(ws.store.tmp, k.owner)]


def waiting(ws: Workspace, run_id: str) -> bool:
    """Whether run ``run_id`` has a record waiting here."""
    return any(k.record.id == run_id for k in kept(ws))
