"""``study run``: each cell locked (one lockfile each, recorded in the registry) and run in
turn on this machine, in the configuration its system names, and recorded in the study.

A cell already ``done`` (its run succeeded and is still recorded) is not run again, so a study
stopped part-way resumes where it stopped; a ``failed`` or ``refused`` cell is tried again.
One process runs a study at a time (a lock in the home, held while it runs; a second is
refused, naming it). Every cell of a model entry runs the versions its first cell resolved
to: a cell whose ranges now resolve to others (a version published since) is refused, naming
both, so no row of the matrix compares two versions.

A system's ``cpus`` become the CPU affinity of every thread of this process for the cell's run
(framework thread pools made by an earlier cell included; on Linux each thread has its own)
and of the worker processes it starts, which inherit it; the run records how many CPUs its
timed region had (``details.machine.cpus``). After the cell every thread gets this process's
CPUs back. CPUs this machine does not offer refuse the cell, naming them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile
    from pinbench.studies.cells import Cell
    from pinbench.studies.spec import Study
    from pinbench.worker.stop import Stop
    from pinbench.workspace import Workspace

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Ran:
    """What ``study run`` did: cells run now, skipped as done before, failed, refused."""

    name: str
    ran: int
    skipped: int
    failed: int
    refused: int


class CpusAbsent(UserError):
    def __init__(self, *, missing: list[int], offered: list[int]) -> None:
        super().__init__(f"cpus {missing} are not among the CPUs this process may use ({offered})")
        self.missing = missing
        self.offered = offered


class StudyBusy(UserError):
    def __init__(self, *, name: str, lock: Path) -> None:
        super().__init__(
            f"study {name!r} is running in another process (it holds {lock}): wait for it to "
            "end, or stop it; cells done are kept"
        )
        self.name = name
        self.lock = str(lock)


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:  # no /proc: this thread only
        return [0]


def _pin(tid: int, cpus: set[int]) -> None:
    with suppress(ProcessLookupError):  # the thread ended meanwhile
        os.sched_setaffinity(tid, cpus)


@contextmanager
def affinity(cpus: list[int] | None) -> Iterator[None]:
    """Every thread of this process on ``cpus`` (None: as they are) until the block ends; then
    every thread on this process's CPUs as they were."""
    if cpus is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    missing = sorted(set(cpus) - before)
    if missing:
        raise CpusAbsent(missing=missing, offered=sorted(before))
    for tid in _threads():
        _pin(tid, set(cpus))
    try:
        yield
    finally:
        for tid in _threads():
            _pin(tid, before)


LOCK_TRIES, LOCK_WAIT_S = 5, 0.02


def _lock_path(ws: Workspace, name: str) -> Path:
    return ws.settings.home / "locks" / f"study-{name}.lock"


def hold_study_lock(ws: Workspace, name: str) -> IO[str]:
    """The study's lock (``PINBENCH_HOME/locks/study-NAME.lock``, ``flock``: released when the
    handle closes or this process ends, however it ends), held by the handle returned; another
    holder refuses with ``StudyBusy``."""
    import fcntl

    path = _lock_path(ws, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "w")  # noqa: SIM115  (held by the caller)
    for attempt in range(LOCK_TRIES):  # study_active's brief shared lock is not a holder
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if attempt + 1 < LOCK_TRIES:
                time.sleep(LOCK_WAIT_S)
        else:
            return handle
    handle.close()
    raise StudyBusy(name=name, lock=path)


@contextmanager
def study_lock(ws: Workspace, name: str) -> Iterator[None]:
    """Hold the study's lock while the block runs (``hold_study_lock``)."""
    with hold_study_lock(ws, name):
        yield


def study_active(ws: Workspace, name: str) -> bool:
    """Whether a process (a ``study run``, a server's drivers) holds the study's lock now."""
    import fcntl

    from pinbench.studies.spec import NAME

    if not NAME.match(name):
        return False
    try:
        handle = open(_lock_path(ws, name), "rb")  # noqa: SIM115
    except FileNotFoundError:
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def resolved(lock: Lockfile) -> str:
    """The model, framework and dataset versions a lockfile pins, as one text."""
    refs = {a.kind: f"{a.name}@{a.version}" for a in lock.body.artifacts}
    return " ".join(refs.get(k, "-") for k in ("model", "framework", "dataset"))


def run_cell(
    ws: Workspace,
    study_id: int,
    cell: Cell,
    runner: str,
    stop: Stop | None,
    pins: dict[str, str],
    *,
    allow_code: bool = False,
) -> str:
    """Lock and run one cell; record and return its state (``done``, ``failed``,
    ``refused``). ``pins``: what each model entry's cells resolved to, by entry;
    ``allow_code``: the operator's consent to processing code (``run --allow-code``)."""
    import uuid

    from pinbench.errors import PinbenchError
    from pinbench.evaluator.records.run_view import RunNotFound, show_run
    from pinbench.evaluator.run import run_lockfile
    from pinbench.registry import service
    from pinbench.registry.request import parse_request
    from pinbench.studies.store import record_cell

    def refused(reason: str, lock: Lockfile | None = None) -> str:
        digest = lock.digest.hex if lock is not None else None
        record_cell(ws, study_id, cell.key, state="refused", lockfile_digest=digest, reason=reason)
        return "refused"

    try:
        request = parse_request(cell.request, source=cell.label)
        lock, _ = service.lock(ws, request)
    except PinbenchError as exc:
        return refused(str(exc))
    entry, now = cell.entry_key, resolved(lock)
    if pins.setdefault(entry, now) != now:
        return refused(
            f"its ranges resolve to {now} now, where this model's other cells ran "
            f"{pins[entry]}: a row compares one version (pin it, or run the study under a new "
            "name)",
            lock,
        )
    run_id = str(uuid.uuid4())
    try:
        with affinity(cell.system.cpus):
            run_lockfile(
                ws, lock, runner=runner, say=lambda _: None, run_id=run_id, stop=stop,
                allow_code=allow_code,
            )  # fmt: skip
    except CpusAbsent as exc:
        return refused(f"system {cell.system.name}: {exc}", lock)
    except PinbenchError as exc:
        try:
            show_run(ws, run_id)
        except RunNotFound:  # refused before anything was recorded
            return refused(str(exc), lock)
        record_cell(ws, study_id, cell.key, state="failed", lockfile_digest=lock.digest.hex,
                    run_id=run_id, reason=str(exc))  # fmt: skip
        return "failed"
    record_cell(
        ws, study_id, cell.key, state="done", lockfile_digest=lock.digest.hex, run_id=run_id
    )
    return "done"


def done_run(ws: Workspace, row: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded run of a cell that is done and whose run still is; else None."""
    from pinbench.evaluator.records.run_view import RunNotFound, show_run

    if row is None or row["state"] != "done" or not row["run"]:
        return None
    try:
        run = show_run(ws, str(row["run"]))
    except RunNotFound:  # removed since (runs rm, retention): run it again
        return None
    return run if run["status"] == "succeeded" else None


def pinned_of(run: dict[str, Any]) -> str:
    """What a recorded run's lockfile pinned, as ``resolved`` says it."""
    refs = {a["kind"]: f"{a['name']}@{a['version']}" for a in run["lockfile_body"]["artifacts"]}
    return " ".join(refs.get(k, "-") for k in ("model", "framework", "dataset"))


def run_study(
    ws: Workspace,
    study: Study,
    source: str,
    *,
    say: Say,
    runner: str | None = None,
    stop: Stop | None = None,
    allow_code: bool = False,
) -> Ran:
    """Run every cell of ``study`` not done before, in order, saying each one's outcome
    (``allow_code``: as ``run_cell``)."""
    from pinbench.studies.cells import cells as cells_of
    from pinbench.studies.store import open_study, read_cell, read_study

    if study.on_agents:
        from pinbench.studies.errors import StudyError

        raise StudyError(
            source=source,
            reason="its systems are a cluster's agents: run it through the server that has "
            "that cluster (`pinbench serve --cluster ...`; PINBENCH_URL set, `study run` posts "
            "it there)",
        )
    cells = cells_of(study, source=source)
    with study_lock(ws, study.name):
        study_id = open_study(ws, study, source, cells)
        recorded = read_study(ws, study.name)["cells"]
        done = {c.key: done_run(ws, recorded.get(c.key)) for c in cells}
        pins: dict[str, str] = {}
        for cell in cells:
            run = done[cell.key]
            if run is not None:
                pins.setdefault(cell.entry_key, pinned_of(run))
        chosen = runner or study.runner
        counts = {"done": 0, "failed": 0, "refused": 0, "skipped": 0}
        width = len(str(len(cells)))
        for n, cell in enumerate(cells, 1):
            head = f"[{n:>{width}}/{len(cells)}] {cell.label}"
            run = done[cell.key]
            if run is not None:
                counts["skipped"] += 1
                say(f"{head}: done before (run {run['id'][:8]})")
                continue
            state = run_cell(ws, study_id, cell, chosen, stop, pins, allow_code=allow_code)
            counts[state] += 1
            after = read_cell(ws, study_id, cell.key)
            said = f" run {str(after['run'])[:8]}" if after["run"] else ""
            why = f" {after['reason']}" if after["reason"] and state != "done" else ""
            say(f"{head}: {state}{said}{why}")
            if stop is not None and stop.is_set():
                say(f"study {study.name} stopped: run it again to resume (cells done are kept)")
                stop.check()
    return Ran(study.name, counts["done"], counts["skipped"], counts["failed"], counts["refused"])
