"""``/metrics`` of a server with ``--workers N``: every worker's counts, whichever answers.

A scrape reaches one uvicorn worker, and each worker process counts only the requests it
answered and the runs it holds. So each worker writes a snapshot of its own numbers
(``RequestStats.snapshot``, its run pool, its database pool) into its server's folder
(``HOME/metrics-workers/HOST-PID/WORKERPID.json``: one folder per ``pinbench serve``, so two
servers on one home, as in a rolling upgrade, never sum each other's numbers) every
``EVERY_S`` seconds, written beside and renamed so a reader never sees half a file; the
answering worker sums its own numbers (taken in memory) and the other snapshots in the
folder. Counters and histograms sum every worker's, also of one that has died since (its
counts stay counted: a counter never goes back while the server lives); gauges (the run and
database pools, the workers themselves) sum only the live workers'. A worker is live while its
process exists and its run pool's heartbeat beat within its lease (``PINBENCH_SERVER_LEASE_S``,
30 s by default): past that age the other servers take it for gone (its lease, which those
beats renew, expired) and mark its runs interrupted, so a worker that hangs or is stopped is
counted out when its runs are, not while its process merely exists. A snapshot of the wrong
shape is skipped. With one worker there is no folder and nothing is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVERY_S = 1.0
"""How often a worker writes its snapshot (a scrape sees others' numbers this late at most)."""
MAX_SNAPSHOT_BYTES = 16 << 20
"""A larger file in the folder is not read (routes and statuses bound a real snapshot)."""
FOLDER = "metrics-workers"


def prepare(home: Path) -> Path:
    """A fresh folder for this server's workers (``pinbench serve``, before they start); the
    folders of this host's servers that are gone are removed."""
    root = home / FOLDER
    root.mkdir(mode=0o700, exist_ok=True)
    root.chmod(0o700)
    host = socket.gethostname()
    for old in root.iterdir():
        owner_host, _, pid = old.name.rpartition("-")
        if old.is_dir() and owner_host == host and pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    folder = root / f"{host}-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700)
    return folder


@dataclass(frozen=True)
class Snapshot:
    pid: int
    numbers: dict[str, Any]


def write(folder: Path, numbers: dict[str, Any]) -> None:
    """This process's snapshot, replacing its previous one (a temp file of its own, renamed)."""
    fd, temp = tempfile.mkstemp(prefix=".", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(numbers, out)
        os.replace(temp, folder / f"{os.getpid()}.json")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def read(folder: Path) -> list[Snapshot]:
    """Every other worker's last snapshot (unreadable, oversized or misshapen ones skipped)."""
    found: list[Snapshot] = []
    for path in sorted(folder.glob("*.json")):
        if not path.stem.isdigit() or int(path.stem) == os.getpid():
            continue
        try:
            if path.stat().st_size > MAX_SNAPSHOT_BYTES:
                continue
            numbers = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # removed meanwhile: the next scrape reads its successor
        if well_formed(numbers):
            found.append(Snapshot(int(path.stem), numbers))
    return found


def well_formed(numbers: Any) -> bool:
    """The shape ``probes.own_numbers`` writes (another version's file is left out)."""
    if not isinstance(numbers, dict):
        return False
    requests = numbers.get("requests")
    if not isinstance(requests, dict):
        return False
    counts, hist = requests.get("counts", []), requests.get("hist", [])
    pool, db = numbers.get("pool"), numbers.get("db_pool")
    pulse = [numbers[k] for k in ("beat", "lease_s") if k in numbers]
    return (
        isinstance(counts, list)
        and all(_row(c, (str, str, int, int)) for c in counts)
        and isinstance(hist, list)
        and all(_row(h, (str, str, list)) and _numbers(h[2]) for h in hist)
        and _ints(pool, 3)
        and (db is None or _ints(db, 2))
        and _numbers(pulse)
    )


def beating(numbers: dict[str, Any], now: float) -> bool:
    """Whether a snapshot's worker beat within its lease at ``now`` (wall time); one that
    does not say (written by another version) is not counted live."""
    beat, lease = numbers.get("beat"), numbers.get("lease_s")
    if not _numbers([beat, lease]) or beat is None or lease is None:
        return False
    return bool(now - beat < lease)


def _row(value: Any, kinds: tuple[type, ...]) -> bool:
    return (
        isinstance(value, list)
        and len(value) == len(kinds)
        and all(
            isinstance(v, k) and not isinstance(v, bool) for v, k in zip(value, kinds, strict=True)
        )
    )


def _numbers(values: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _ints(value: Any, length: int) -> bool:
    return _row(value, (int,) * length)


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

    def __init__(self, folder: Path, take: Callable[[], dict[str, Any]]) -> None:
        self.folder = folder
        self.take = take
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="metrics-snapshot", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._write()

    def _write(self) -> None:
        with contextlib.suppress(OSError):  # a full disk: a scrape reads what the folder has
            write(self.folder, self.take())

    def _loop(self) -> None:
        while not self._stop.wait(EVERY_S):
            self._write()
