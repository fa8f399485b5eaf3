"""``study run``: each cell locked (one lockfile each, recorded in the registry) and run in
turn on this machine, in the configuration its system names, and recorded in the study.

A cell already ``done`` (its run succeeded and is still recorded) is not run again, so a study
stopped part-way resumes where it stopped; a ``failed`` or ``refused`` cell is tried again. A
system's ``cpus`` become this process's CPU affinity for the cell's run, which the worker
inherits (the run records the affinity it had: ``host.affinity``), and are given back after
it; CPUs this machine does not offer refuse the cell, naming them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.evaluator.stop import Stop
    from pinbench.studies.cells import Cell
    from pinbench.studies.spec import Study
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


class CpusAbsent(Exception):
    def __init__(self, missing: list[int], offered: list[int]) -> None:
        super().__init__(f"cpus {missing} are not among the CPUs this process may use ({offered})")


@contextmanager
def affinity(cpus: list[int] | None) -> Iterator[None]:
    """This process on ``cpus`` (None: as it is) until the block ends."""
    if cpus is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    missing = sorted(set(cpus) - before)
    if missing:
        raise CpusAbsent(missing, sorted(before))
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _done_before(ws: Workspace, recorded: dict[str, object] | None) -> bool:
    from pinbench.evaluator.history import RunNotFound, show_run

    if not isinstance(recorded, dict) or recorded.get("state") != "done" or not recorded["run"]:
        return False
    try:
        return bool(show_run(ws, str(recorded["run"]))["status"] == "succeeded")
    except RunNotFound:  # removed since (runs rm, retention): run it again
        return False


def run_cell(ws: Workspace, study_id: int, cell: Cell, runner: str, stop: Stop | None) -> str:
    """Lock and run one cell; record and return its state (``done``, ``failed``,
    ``refused``)."""
    import uuid

    from pinbench.errors import PinbenchError
    from pinbench.evaluator.history import RunNotFound, show_run
    from pinbench.evaluator.run import run_lockfile
    from pinbench.registry import service
    from pinbench.registry.request import parse_request
    from pinbench.studies.store import record_cell

    try:
        request = parse_request(cell.request, source=cell.label)
        lock, _ = service.lock(ws, request)
    except PinbenchError as exc:
        record_cell(ws, study_id, cell.key, state="refused", reason=str(exc))
        return "refused"
    run_id = str(uuid.uuid4())
    try:
        with affinity(cell.system.cpus):
            run_lockfile(ws, lock, runner=runner, say=lambda _: None, run_id=run_id, stop=stop)
    except CpusAbsent as exc:
        reason = f"system {cell.system.name}: {exc}"
        record_cell(
            ws, study_id, cell.key, state="refused", lockfile_digest=lock.digest.hex, reason=reason
        )
        return "refused"
    except PinbenchError as exc:
        try:
            show_run(ws, run_id)
        except RunNotFound:  # refused before anything was recorded
            record_cell(
                ws,
                study_id,
                cell.key,
                state="refused",
                lockfile_digest=lock.digest.hex,
                reason=str(exc),
            )
            return "refused"
        record_cell(
            ws,
            study_id,
            cell.key,
            state="failed",
            lockfile_digest=lock.digest.hex,
            run_id=run_id,
            reason=str(exc),
        )
        return "failed"
    record_cell(
        ws, study_id, cell.key, state="done", lockfile_digest=lock.digest.hex, run_id=run_id
    )
    return "done"


def run_study(
    ws: Workspace,
    study: Study,
    source: str,
    *,
    say: Say,
    runner: str | None = None,
    stop: Stop | None = None,
) -> Ran:
    """Run every cell of ``study`` not done before, in order, saying each one's outcome."""
    from pinbench.studies.cells import cells as cells_of
    from pinbench.studies.store import open_study, read_study

    cells = cells_of(study, source=source)
    study_id = open_study(ws, study, source, cells)
    recorded = read_study(ws, study.name)["cells"]
    chosen = runner or study.runner
    counts = {"done": 0, "failed": 0, "refused": 0, "skipped": 0}
    width = len(str(len(cells)))
    for n, cell in enumerate(cells, 1):
        head = f"[{n:>{width}}/{len(cells)}] {cell.label}"
        if _done_before(ws, recorded.get(cell.key)):
            counts["skipped"] += 1
            say(f"{head}: done before (run {str(recorded[cell.key]['run'])[:8]})")
            continue
        state = run_cell(ws, study_id, cell, chosen, stop)
        counts[state] += 1
        after = read_study(ws, study.name)["cells"][cell.key]
        said = f"run {str(after['run'])[:8]}" if after["run"] else ""
        why = f" {after['reason']}" if after["reason"] and state != "done" else ""
        say(f"{head}: {state} {said}{why}".rstrip())
        if stop is not None and stop.is_set():
            say(f"study {study.name} stopped: run it again to resume (cells done are kept)")
            stop.check()
    return Ran(study.name, counts["done"], counts["skipped"], counts["failed"], counts["refused"])
