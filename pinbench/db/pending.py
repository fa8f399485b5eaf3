"""Run records waiting for the database, kept in the home (decision 190).

A run that has finished but whose record the database cannot take (it is away) keeps the
record here, ``HOME/pending/OWNER-RUNID.json``, until it is written: its process retries
(``evaluator.recording``) and removes the file once the row is written. ``OWNER`` is the
process's scratch owner (``artifacts.scratch``), whose lock it holds while it lives: a record
whose owner is dead (the server was stopped or killed while the database was away) is written
by the next server that starts on the home, or by a live server's sweep
(``evaluator.recording.record_left``), never while its own process still tries.

The blobs such a record names count as referenced for ``fsck`` and ``gc --blobs``
(``db.upkeep``) however long it waits, whatever the grace period.
"""

from __future__ import annotations

import json
import logging
import os
import re
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
    """Every record in the folder, in name order. A file that is not one is passed over, said
    in the log (``fsck`` reports the blobs it would have held as unreferenced)."""
    where = folder(ws)
    if not where.is_dir():
        return
    for path in sorted(where.iterdir()):
        named = _NAME.fullmatch(path.name)
        if named is None:
            continue
        try:
            record = RunRecord.from_json(json.loads(path.read_bytes()))
        except FileNotFoundError:  # written meanwhile, and removed
            continue
        except (OSError, ValueError, BadRecord) as exc:
            log.warning("%s is not a run record pinbench can write (%s): left alone", path, exc)
            continue
        if record.id == named.group(2):
            yield Kept(path, named.group(1), record)


def left(ws: Workspace) -> list[Kept]:
    """The records whose process is dead: nobody is trying to write them."""
    return [k for k in kept(ws) if not owner_alive(ws.store.tmp, k.owner)]


def waiting(ws: Workspace, run_id: str) -> bool:
    """Whether run ``run_id`` has a record waiting here."""
    return any(k.record.id == run_id for k in kept(ws))
