"""Run records waiting for the database, kept in the home (decision 190).

A run that has finished but whose record the database cannot take (it is away) keeps the
record here, ``HOME/pending/OWNER-RUNID.json``, until it is written: its process retries
(``evaluator.recording``) and removes the file once the row is written. ``OWNER`` is the
process's scratch owner (``artifacts.scratch``), whose lock it holds while it lives: a record
whose owner is dead (the server was stopped or killed while the database was away) is written
by the next server that starts on the home, or by a live server's sweep
(``evaluator.recording.record_left``), never while its own process still tries.

A file there is read as data from a process that may not be pinbench's (anything running as the
service user can write the folder; decision 190, amended): only a regular file, opened without
following a link, of at most ``MAX_RECORD_BYTES``, holding a record whose status is a finished
one and whose results are numbers, is a record; anything else is set aside in
``HOME/pending/refused`` and said in the log. Who may write a record is checked against its row
(``db.run_record.write_left``).

The blobs such a record names count as referenced for ``fsck`` and ``gc --blobs``
(``db.upkeep``) however long it waits, whatever the grace period.
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

from pinbench.artifacts.scratch import owner_alive, owner_of
from pinbench.db.run_record import BadRecord, RunRecord

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.db")
FOLDER = "pending"
REFUSED = "refused"
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
    temp = where / f".{path.name}.new"
    data = json.dumps(record.to_json(), sort_keys=True).encode()
    fd = os.open(temp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    return path


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
