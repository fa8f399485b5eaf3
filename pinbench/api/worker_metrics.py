"""``/metrics`` of a server with ``--workers N``: every worker's counts, whichever answers.

A scrape reaches one uvicorn worker, and each worker process counts only the requests it
answered and the runs it holds. So each worker writes a snapshot of its own numbers
(``RequestStats.snapshot``, its run pool, its database pool) into the server's folder
(``HOME/metrics-workers/PID.json``, replaced atomically) every ``EVERY_S`` seconds and
before it answers a scrape; the answering worker sums every snapshot in the folder.
Counters and histograms sum the snapshots of all workers, also of one that has died since
(its counts stay counted: a counter never goes back while the server lives); gauges (the
run and database pools) sum only the live workers'. ``pinbench serve`` empties the folder
before its workers start. With one worker there is no folder and nothing is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVERY_S = 1.0
"""How often a worker writes its snapshot (a scrape sees others' numbers this late at most)."""
MAX_SNAPSHOT_BYTES = 16 << 20
"""A larger file in the folder is not read (routes and statuses bound a real snapshot)."""
FOLDER = "metrics-workers"


def folder_of(home: Path) -> Path:
    return home / FOLDER


def prepare(home: Path) -> Path:
    """Empty the server's snapshot folder before its workers start (``pinbench serve``)."""
    folder = folder_of(home)
    folder.mkdir(mode=0o700, exist_ok=True)
    for old in folder.iterdir():
        if old.is_file():
            old.unlink()
    return folder


@dataclass(frozen=True)
class Snapshot:
    pid: int
    numbers: dict[str, Any]


def write(folder: Path, numbers: dict[str, Any]) -> None:
    """This process's snapshot, replacing its previous one."""
    pid = os.getpid()
    temp = folder / f".{pid}.json.part"
    temp.write_text(json.dumps(numbers))
    os.replace(temp, folder / f"{pid}.json")


def read(folder: Path) -> list[Snapshot]:
    """Every worker's last snapshot (unreadable or oversized files are skipped)."""
    found: list[Snapshot] = []
    for path in sorted(folder.glob("*.json")):
        if not path.stem.isdigit():
            continue
        try:
            if path.stat().st_size > MAX_SNAPSHOT_BYTES:
                continue
            numbers = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # replaced or removed meanwhile: the next scrape reads it
        if isinstance(numbers, dict):
            found.append(Snapshot(int(path.stem), numbers))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Writer:
    """A daemon thread writing this worker's snapshot every ``EVERY_S`` seconds."""

    def __init__(self, folder: Path, take: Any) -> None:
        self.folder = folder
        self.take = take
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="metrics-snapshot", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.write_now()

    def write_now(self) -> None:
        with contextlib.suppress(OSError):  # a full disk: a scrape reads what the folder has
            write(self.folder, self.take())

    def _loop(self) -> None:
        while not self._stop.wait(EVERY_S):
            self.write_now()
