"""The local runner: evaluate in this interpreter, with whatever is installed here.

A run that executes code its user allowed (a model's processing code, a chain's code) runs it
in a child process of this interpreter instead (``worker_run.run_worker``): code never runs in the
process that scores and records (issue 63), and the host watches what it may not change
(``consented.code_watch``).

Its time is limited by the lockfile's ``limits.timeout_s`` like the isolated runners': a
watchdog asks the evaluation to stop (``pinbench.worker.stop``), which it does at the next
phase or, inside LoadGen, once LoadGen ends its test (queries are then answered without the
model), and the run is recorded failed with the time limit as its reason."""

from __future__ import annotations

import contextlib
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import distributions
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import msgspec

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.scratch import scratch_directory
from pinbench.evaluator.runners.consented import (
    adopt_cache,
    code_watch,
    inputs_cache,
    seed_cache,
)
from pinbench.evaluator.runners.process import RunTimedOut, write_job
from pinbench.evaluator.runners.sandbox import publishes_files, record_sandbox
from pinbench.evaluator.runners.store_files import model_folder, stage_folders, store_paths
from pinbench.evaluator.runners.worker_run import run_worker
from pinbench.processing.consent import needs_code
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.training.distributed.placement import RankPlacement, current
from pinbench.worker.job import Evidence, Job, Say
from pinbench.worker.measure import measure
from pinbench.worker.model_folder import FOLDER, materialise
from pinbench.worker.source import evaluator_digest
from pinbench.worker.stop import Stop, time_limit
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.evaluator.runners.sandbox import Confinement
    from pinbench.evaluator.runners.test01 import Seals
    from pinbench.evaluator.warm import WarmPool


@lru_cache(maxsize=1)
def installed_digest() -> str:
    """sha256 over this interpreter's installed distributions (``name==version``, sorted): not a
    pin, but it tells two local environments apart. Read once per process (~0.13 s)."""
    names = sorted({f"{d.metadata['Name'].lower()}=={d.version}" for d in distributions()})
    return Digest.of_bytes("\n".join(names).encode()).hex


def _strings(paths: dict[str, Path]) -> dict[str, str]:
    return {name: str(where) for name, where in paths.items()}


def _placed(files: dict[str, Path], root: Path) -> dict[str, Path]:
    """``files`` (a dataset's, from the blob store) linked into ``root`` under neutral names
    (``000001.npy``): in a sandbox a sample's path says nothing of its class folder. Its
    suffix is kept (a decoder may read it)."""
    names = {}
    for i, name in enumerate(sorted(files)):
        suffix = PurePosixPath(name).suffix
        names[name] = f"{i:06d}{suffix if len(suffix) <= 12 and suffix[1:].isalnum() else ''}"
    placed = materialise({names[name]: where for name, where in files.items()}, root)
    return {name: placed[names[name]] for name in files}


def write_host_job(
    ws: Workspace,
    lock: Lockfile,
    path: Path,
    cache: Path | None,
    trace: str,
    allow_pickle: bool,
    allow_code: bool,
    confine: Confinement | None = None,
    clock: Sequence[int] = (),
    *,
    ranks: RankPlacement | None = None,
) -> set[str]:
    """The job file at ``path`` for a worker on this machine (the venv runner's, the local
    runner's child): the model's and the stages' folders placed beside it, the data read from
    the blob store. ``confine``: for a worker in that sandbox: the data linked beside the job
    too (the blob store is not in the sandbox), at neutral names, every path the one the
    worker sees, and the sandbox's own cache for the run, seeded with copies of the entries
    cached for its dataset (``consented.seed_cache``; returned: ``adopt_cache`` takes the
    rest when it ends). ``clock``: the descriptors of a host-timed test (``host_clock``).
    ``ranks``: this system's share of a training run's ranks (``JobSettings.ranks``)."""
    data = store_paths(ws, lock, Kind.DATASET)
    validation = store_paths(ws, lock, "validation")
    seeded: set[str] = set()
    if confine is not None:
        data = _placed(data, path.parent / "data")
        validation = _placed(validation, path.parent / "validation")
        cache = confine.root / "cache"
        seeded = seed_cache(ws, lock, cache)

    def seen(paths: dict[str, Path]) -> dict[str, str]:
        if confine is None:
            return _strings(paths)
        return {name: confine.inside(where) for name, where in paths.items()}

    write_job(
        path,
        lock,
        seen(model_folder(ws, lock, path.parent / FOLDER)),
        seen(data),
        cache=None if cache is None else (confine.inside(cache) if confine else str(cache)),
        trace=trace,
        allow_pickle=allow_pickle,
        validation=seen(validation),
        allow_code=allow_code,
        stages={
            name: seen(files)
            for name, files in stage_folders(ws, lock, path.parent / "stages").items()
        },
        clock=clock,
        ranks=None if ranks is None else msgspec.to_builtins(ranks),
    )
    return seeded


@dataclass(frozen=True, slots=True)
class JobSettings:
    """What a worker's job says besides its files (``write_host_job``)."""

    cache: Path | None
    trace: str
    allow_pickle: bool
    allow_code: bool
    ranks: RankPlacement | None = field(default_factory=current)
    """This system's share of a training run's ranks spread over systems: the placement its
    agent runs this thread's evaluation with (``placement.placed``); its worker's sandbox
    then keeps the machine's network."""


def run_in_worker(
    ws: Workspace,
    lock: Lockfile,
    python: Path | str,
    evidence: Evidence,
    say: Say,
    stop: Stop,
    settings: JobSettings,
    runner: str,
    environment: Path | None,
    sandbox: str,
    inherit: bool = False,
    audit: bool = False,
) -> None:
    """One cold worker for ``lock`` on this machine (the local runner's child, the venv
    runner): in the sandbox unless ``sandbox`` is ``none`` (then watched: ``code_watch`` over
    ``environment``), its job written as the sandbox sees it, and the inputs it cached kept
    for the next runs of its model once it ends (``adopt_cache``). The host keeps the clock
    (``host_clock``) of a run whose model carries code, and of any run with ``audit``; after
    such a performance test a second worker answers in accuracy mode for TEST01 (``test01``)."""
    from pinbench.evaluator.runners.audited_run import run_and_audit
    from pinbench.evaluator.runners.clock_link import keeps_clock

    code = settings.allow_code and needs_code(lock)
    timed = audit or keeps_clock(
        lock, code=code, allow_pickle=settings.allow_pickle, traced=settings.trace != "none"
    )
    one = _Worker(ws, python, say, stop, settings, runner, environment, sandbox, inherit)
    if not timed:
        one.run(lock, evidence, False)
        return
    run_and_audit(
        ws,
        lock,
        evidence,
        say,
        lambda lk, ev, turn: one.run(lk, ev, True, adopt=not turn.followed, unique=turn.unique),
        lambda: one.answered,
    )


@dataclass
class _Worker:
    """How ``run_in_worker`` starts a worker, for the run's lockfile and its TEST01 twin."""

    ws: Workspace
    python: Path | str
    say: Say
    stop: Stop
    settings: JobSettings
    runner: str
    environment: Path | None
    sandbox: str
    inherit: bool
    answered: int = 0
    """The samples the last timed worker answered (counted when it failed too)."""

    def run(
        self,
        lock: Lockfile,
        evidence: Evidence,
        timed: bool,
        adopt: bool = True,
        unique: bool = False,
    ) -> Seals | None:
        """One worker for ``lock`` into ``evidence``; with ``timed``, the seals of its answers
        the host's clock read (and the samples answered twice, differently), in TEST04's
        unique test with ``unique``; with ``adopt``, the inputs it cached kept for the next
        runs."""
        from pinbench.evaluator.runners.host_clock import for_run

        ws, sandboxed = self.ws, self.sandbox != "none"
        with (
            scratch_directory(ws.store.tmp, "run") as tmp,
            scratch_directory(ws.store.tmp, "run") as logs,
            contextlib.ExitStack() as ending,
        ):
            seeded: set[str] = set()
            clock = for_run(lock, Path(logs), self.stop, unique=unique) if timed else None
            if clock is not None:
                ending.callback(clock.close)

            def write(job: Path, confine: Confinement | None) -> None:
                s = self.settings
                fds = clock.worker_fds() if clock is not None else ()
                written = write_host_job(
                    ws,
                    lock,
                    job,
                    s.cache,
                    s.trace,
                    s.allow_pickle,
                    s.allow_code,
                    confine,
                    fds,
                    ranks=s.ranks,
                )
                seeded.update(written)

            watch = [] if sandboxed else code_watch(ws, lock, self.environment)
            try:
                run_worker(
                    self.python,
                    tmp,
                    write,
                    lock,
                    evidence,
                    self.say,
                    self.stop,
                    self.runner,
                    watch,
                    inherit=self.inherit,
                    sandboxed=sandboxed,
                    hidden=hidden(ws),
                    clock=clock,
                    network=self.settings.ranks is not None,
                )
            finally:
                self.answered = len(clock.seals) if clock is not None else 0
            if sandboxed and adopt:
                adopt_cache(ws, lock, tmp / "cache", seeded)
            return (clock.seals, clock.unsteady) if clock is not None else None


def hidden(ws: Workspace) -> list[Path]:
    """What a sandboxed worker's interpreter folders may not hold (``sandbox.wrap``): the home
    (its keys, database, caches), the blob store, the user's home folder."""
    return [ws.settings.home, ws.store.root, Path.home()]


def in_worker(
    lock: Lockfile, *, allow_code: bool, sandbox: str = "bwrap", audit: bool = False
) -> bool:
    """Whether the local runner runs ``lock`` in a worker process, never in the process that
    scores and records: in the sandbox every run of a model or chain, a data-only one too (a
    framework's parser of a publisher's file is code pinbench did not write: decision 310);
    with ``sandbox`` none, code it may run and an audit (the host keeps the clock) in an
    unsandboxed child, anything else here. An operator benchmark (Deep500's L0: pinbench's
    own operators, no publisher's file) stays here. The one rule ``run`` and a server's check
    before it queues a run (``api.sandbox_check``) apply."""
    if (allow_code and needs_code(lock)) or audit:
        return True
    return sandbox != "none" and publishes_files(lock)


def run(
    ws: Workspace,
    lock: Lockfile,
    evidence: Evidence,
    say: Say,
    trace: str,
    *,
    allow_pickle: bool = False,
    allow_code: bool = False,
    stop: Stop | None = None,
    warm: WarmPool | None = None,
    sandbox: str = "bwrap",
    audit: bool = False,
) -> None:
    evidence.environment = {
        "runner": "local",
        "digest": installed_digest(),
        "python": platform.python_version(),
        "executable": sys.executable,
        "evaluator": evaluator_digest(),
    }
    stop = stop or Stop()
    cache = inputs_cache(ws, lock)
    if in_worker(lock, allow_code=allow_code, sandbox=sandbox, audit=audit):
        # never in the process that scores and records; in the sandbox unless told otherwise
        evidence.environment["process"] = "child"
        python = sys.executable  # where the host runs, its environment inherited
        settings = JobSettings(cache, trace, allow_pickle, allow_code)
        run_in_worker(
            ws, lock, python, evidence, say, stop, settings, "local", None, sandbox, True, audit
        )
        return
    record_sandbox(evidence.environment, False)
    limit = lock.body.limits.timeout_s
    with (
        time_limit(stop, limit, RunTimedOut(runner="local", timeout_s=limit)),
        scratch_directory(ws.store.tmp, "run") as scratch,
    ):
        from pinbench.worker.seal import host_seal

        seal = host_seal(ws.store.cache_key)  # no trusted key: no cache read or written
        job = Job(
            lock=lock,
            model_paths=model_folder(ws, lock, Path(scratch) / FOLDER),
            stage_paths=stage_folders(ws, lock, Path(scratch) / "stages"),
            data_paths=store_paths(ws, lock, Kind.DATASET),
            validation_paths=store_paths(ws, lock, "validation"),
            scratch=Path(scratch),
            cache=cache if seal is not None else None,
            trace=trace,
            allow_pickle=allow_pickle,
            allow_code=allow_code,
            stop=stop,
            seal=seal,
            ranks=current(),
        )
        measure(job, evidence, say)
