"""One worker process on this machine, for one job (``run_worker``): the job written, the
worker started (``process.worker_start``), in the sandbox unless told otherwise, run as a
child within the lockfile's time limit (``child.run_child``), its results collected and the
host's own readings (clock, memory, timings) put in their place."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.evaluator.runners.child import run_child
from pinbench.evaluator.runners.guard import Watched, watched
from pinbench.evaluator.runners.process import (
    JOB,
    WorkerCrashed,
    collect,
    host_memory,
    worker_start,
)
from pinbench.evaluator.runners.sandbox import Confinement, failed_to_start, record_sandbox
from pinbench.evaluator.timing_checks import check_timings
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.job import Evidence, Say
from pinbench.worker.results import RESULT
from pinbench.worker.stop import Stop

if TYPE_CHECKING:
    from pinbench.evaluator.runners.host_clock import HostClock


def run_worker(
    python: Path | str,
    root: Path,
    write: Callable[[Path, Confinement | None], None],
    lock: Lockfile,
    evidence: Evidence,
    say: Say,
    stop: Stop,
    runner: str,
    watch: list[Watched],
    *,
    inherit: bool = False,
    sandboxed: bool = True,
    hidden: Sequence[Path] = (),
    clock: HostClock | None = None,
    network: bool = False,
) -> None:
    """One worker process on this machine, for one job: ``write`` writes the job file at the
    path it is given (with the paths the worker sees: inside the sandbox when one is given);
    the worker (``worker_start`` in ``root``) runs it within the lockfile's time limit, while
    the host watches ``watch`` (``guard.watched``; a sandboxed worker can change none of it),
    and its results are read into ``evidence``. ``inherit``: as ``worker_start``'s.
    ``sandboxed``: in the sandbox (``runners.sandbox``) over ``root``, hiding ``hidden``.
    ``clock``: the host times the test (``host_clock``); its figures replace the worker's.
    ``network``: the sandbox keeps the machine's network (``Confinement.network``)."""
    root = root.absolute()  # bubblewrap starts in the worker's folder: a relative home's paths
    job, out = root / JOB, root / "out"
    confine = Confinement(root, network=network) if sandboxed else None
    if confine is not None:
        confine.prepare()
    else:
        out.mkdir()
    write(job, confine)
    child = worker_start(
        python,
        root / "worker",
        [str(job), str(out)],
        inherit=inherit,
        confine=confine,
        hidden=hidden,
    )
    record_sandbox(evidence.environment, confine is not None, network and confine is not None)
    with watched(watch):
        started = time.monotonic_ns()
        peak: list[int] = []
        status, tail = run_child(
            child.argv,
            env=child.env,
            cwd=child.cwd,
            timeout_s=lock.body.limits.timeout_s,
            say=say,
            runner=runner,
            stop=stop,
            pass_fds=clock.worker_fds() if clock is not None else (),
            on_start=clock.start if clock is not None else None,
            peak=peak,
        )
        wall_ns = time.monotonic_ns() - started
        if confine is not None and not (out / RESULT).exists():
            refused = failed_to_start(status, tail)
            if refused is not None:
                raise refused
        if status not in (0, 1):
            reason = "was killed" if status < 0 else "stopped"
            raise WorkerCrashed(runner=runner, status=status, reason=reason, tail=tail)
        if clock is not None:
            clock.settle()
        collect(runner, out, lock, evidence, status=status, tail=tail)
        if clock is not None:
            clock.apply(evidence)
        host_memory(evidence, peak[0] if peak else 0)
        check_timings(
            lock.body.scenario.name, evidence.latencies, wall_ns, evidence.details.get("loadgen")
        )
