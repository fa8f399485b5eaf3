"""Warm evaluators: one evaluator process per environment kept alive between runs (opt-in).

Importing a framework costs seconds, paid again by every cold run. With ``pinbench serve
--warm`` (or ``pinbench agent start --warm``) the venv and docker runners keep one evaluator
per key (runner, environment digest, evaluator digest, the model; for docker also the
container's limits, which are the container's own) running ``python -m pinbench.worker.main
--serve`` and
hand it job after job through a folder: ``jobs/N/job.json`` then ``jobs/N/go``; the worker
answers with ``out/N`` (the same result files a cold evaluator writes, validated the same way)
and ``out/N.exit``. The bytes are still checked inside the boundary, every job.

What a warm run gives up, and so what is recorded on it (``details.environment``): ``warm``
(true when the process had served runs before), ``warm_served_before`` and ``warm_process``
(its pid or container). A model's code can leave state in the process (or files in its answers
folder) for the runs after it, so only models of ``WARM_FORMATS`` share one; any other runs
cold, recorded ``warm: false`` with the reason. A run stopped, timed out or crashed takes its
process with it; the next run starts a fresh one. One process serves one run at a time; a run
that finds its key's process busy runs cold.
"""

from __future__ import annotations

import shutil
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from pinbench.artifacts.plain_file import plain_bytes
from pinbench.evaluator.policy import needs_pickle
from pinbench.evaluator.runners.process import (
    EvaluationFailed,
    Held,
    Relay,
    RunTimedOut,
    WorkerCrashed,
    WorkerStopped,
    collect,
)
from pinbench.processing.consent import needs_code
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.job import Evidence, Say
from pinbench.worker.main import IDLE_S, SERVED
from pinbench.worker.stop import Stop

POLL_S = 0.005
"""How often a waiting run looks for its job's exit file."""
ALIVE_EVERY_S = 0.5
"""How often it asks whether the process is still there (a container costs an API call)."""
SETTLE_S = 2.0
"""How long a finished job's last output lines may take to arrive through the relay."""
WARM_FORMATS = frozenset({"onnx", "safetensors"})
"""Model formats that may share a warm evaluator: a graph of pure tensor operators, or weights
for one of pinbench's own architectures. Every other format can carry code or file operations
of its own (TorchScript, torch.export, SavedModel's ReadFile/WriteFile ops, Keras layers,
pickles) that could outlast its run in the process or reach the evaluator's answers folder,
and so touch the runs after it."""
PICKLE_REASON = "a pickled model runs arbitrary code: it never shares an evaluator process"
CODE_REASON = (
    "the model's preprocess/postprocess code is the publisher's Python: it never shares an "
    "evaluator process"
)
BUSY_REASON = "its warm evaluator was serving another run"
CLOSED_REASON = "the warm evaluators were being shut down"
OPERATOR_REASON = (
    "an operator benchmark or a training run uses a fresh process: thread and determinism "
    "settings are fixed at a framework's first use"
)
EXIT_BYTES = 8
"""An honest exit file holds a status of a few digits."""
ENDED = "(warm) ended during the run"


def format_reason(fmt: str) -> str:
    return (
        f"a {fmt} model can carry operations of its own that could touch the runs after it; "
        f"only {' and '.join(sorted(WARM_FORMATS))} models share a warm evaluator"
    )


def read_exit(path: Path) -> int | None:
    """The status in a job's exit file, read without trusting it: the folder is writable from
    inside the evaluator, so a link, a FIFO, a device or anything but a few digits is refused
    (None) rather than followed, waited on or read whole."""
    found = plain_bytes(path, EXIT_BYTES)
    if found is None:
        return None
    text = found.decode("ascii", "replace").strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _quiet(text: str) -> None:
    pass


class WarmEvaluator(ABC):
    """One evaluator process serving jobs from ``root/jobs``, answering in ``root/out``."""

    runner: str

    def __init__(self, root: Path) -> None:
        self.root = root
        self.jobs, self.out = root / "jobs", root / "out"
        self.served = 0
        self._say: Say = _quiet
        self._served_line = ""
        self._settled = threading.Event()
        self.relay: Relay | None = None

    @property
    @abstractmethod
    def ident(self) -> str:
        """What the run's record names the process by (a pid, a container)."""

    @abstractmethod
    def alive(self) -> bool: ...

    def host_pid(self) -> int | None:
        """The process's pid in this machine's ``/proc`` (None: a container's, not watched
        here), whose tree ``Held`` watches for a stopped process."""
        return None

    @abstractmethod
    def kill(self) -> None:
        """End the process now (and whatever it holds: a container is removed)."""

    def recorded(self) -> dict[str, str]:
        """What a run it serves records about it (``details.environment``)."""
        return {"warm_process": self.ident}

    def died(self, tail: list[str]) -> Exception:
        """The error of a process that ended without answering its job."""
        return self.crashed(-1, ENDED, tail)

    def crashed(self, status: int, reason: str, tail: list[str]) -> WorkerCrashed:
        return WorkerCrashed(runner=self.runner, status=status, reason=reason, tail=tail)

    def route(self, line: str) -> None:
        """The relay's ``say``: a line of the current job's output, or its end."""
        if line == self._served_line:
            self._settled.set()
        elif not line.startswith(SERVED):
            self._say(line)

    def run_job(
        self,
        n: int,
        lock: Lockfile,
        evidence: Evidence,
        say: Say,
        stop: Stop,
    ) -> None:
        """Start job ``n`` (its ``jobs/N/job.json`` written by the caller), wait for its exit
        file, and read its results into ``evidence``; past the lockfile's time limit or on a
        stop the process is killed (it cannot be interrupted otherwise) and the error raised."""
        assert self.relay is not None
        self._say, self._served_line = say, f"{SERVED} {n}"
        self._settled.clear()
        self.relay.tail = []
        exit_file = self.out / f"{n}.exit"
        timeout_s = lock.body.limits.timeout_s
        deadline = time.monotonic() + timeout_s
        checked = time.monotonic()
        held, pid = Held(self.runner), self.host_pid()
        exit_file.unlink(missing_ok=True)  # only this job's worker may say it ended
        (self.jobs / str(n) / "go").touch()
        try:
            while not exit_file.exists():
                now = time.monotonic()
                if stop.is_set():
                    self.kill()
                    stop.check()
                if now >= deadline:
                    self.kill()
                    raise RunTimedOut(runner=self.runner, timeout_s=timeout_s)
                if now - checked >= ALIVE_EVERY_S:
                    checked = now
                    if not self.alive() and not exit_file.exists():
                        raise self.died(self.relay.join())
                    if pid is not None:
                        try:
                            held.check(pid)
                        except WorkerStopped:
                            self.kill()
                            raise
                time.sleep(POLL_S)
            status = read_exit(exit_file)
            self._settled.wait(SETTLE_S)
            tail = list(self.relay.tail)
            if status is None:
                self.kill()
                raise self.crashed(-1, "(warm) left no readable exit status", tail)
            if status not in (0, 1):
                self.kill()
                raise self.crashed(status, "(warm) stopped", tail)
            collect(self.runner, self.out / str(n), lock, evidence, status=status, tail=tail)
        finally:
            self._say = _quiet
            shutil.rmtree(self.jobs / str(n), ignore_errors=True)
            shutil.rmtree(self.out / str(n), ignore_errors=True)
            exit_file.unlink(missing_ok=True)
            self.served += 1
        stop.check()

    def close(self) -> None:
        with suppress(Exception):
            self.kill()
        if self.relay is not None:
            self.relay.join()
        shutil.rmtree(self.root, ignore_errors=True)


Key = tuple[str, ...]


Start = Callable[[Path, float], WarmEvaluator]
"""A runner's way to start an evaluator: in this (new, empty) folder, ending itself after this
many idle seconds."""


class WarmPool:
    """The warm evaluators of one server or agent, one per key; ``close`` ends them all."""

    def __init__(self, root: Path, idle_s: float = IDLE_S) -> None:
        self.root = root
        self.idle_s = idle_s
        """A warm evaluator with no job for this long ends itself (it is started again)."""
        self._lock = threading.Lock()
        self._evaluators: dict[Key, WarmEvaluator] = {}
        """Every evaluator started and not yet closed."""
        self._busy: set[Key] = set()
        """The keys whose evaluator serves a run now."""
        self._closed = False
        self._count = 0
        self._scratch = ExitStack()

    @property
    def closed(self) -> bool:
        return self._closed

    @classmethod
    def in_scratch(cls, tmp: Path, idle_s: float = IDLE_S) -> WarmPool:
        """A pool whose folders are scratch of this process in ``tmp`` (removed by ``close``,
        or by ``reclaim`` once this process is gone however it ended)."""
        from pinbench.artifacts.scratch import scratch_directory

        stack = ExitStack()
        pool = cls(stack.enter_context(scratch_directory(tmp, "warm")), idle_s)
        pool._scratch = stack
        return pool

    def _folder(self) -> Path:
        """A new, empty folder for one evaluator's jobs and answers."""
        with self._lock:
            self._count += 1
            path = self.root / f"warm-{self._count}"
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)  # a container's user (nobody) must reach its folder
        (path / "jobs").mkdir(parents=True)
        (path / "out").mkdir()
        return path

    def _drop(self, key: Key, evaluator: WarmEvaluator) -> None:
        with self._lock:
            if self._evaluators.get(key) is evaluator:
                del self._evaluators[key]
        evaluator.close()

    @contextmanager
    def take(self, key: Key, start: Start) -> Iterator[WarmEvaluator | None]:
        """The key's evaluator for one run (started if there is none, or it ended); None when
        another run holds it or the pool is closed (this run goes cold)."""
        with self._lock:
            mine = key not in self._busy and not self._closed
            if mine:
                self._busy.add(key)
            held = self._evaluators.get(key)
        if not mine:
            yield None
            return
        try:
            if held is not None and not held.alive():
                self._drop(key, held)
                held = None
            if held is None:
                held = start(self._folder(), self.idle_s)
                with self._lock:
                    self._evaluators[key] = held
            yield held
        finally:
            with self._lock:
                self._busy.discard(key)
            if held is not None and (self._closed or not held.alive()):
                self._drop(key, held)

    def close(self) -> None:
        with self._lock:  # busy ones too: their runs are being stopped with the server
            self._closed = True
            held, self._evaluators = list(self._evaluators.values()), {}
        for evaluator in held:
            evaluator.close()
        self._scratch.close()


WriteJob = Callable[[int, Path, Path, "WarmEvaluator"], None]
"""A runner's part of warm job ``N``: write ``job.json`` (and what it names) into the job's
folder, given its answers folder."""


def run_warm(
    pool: WarmPool,
    key: Key,
    start: Start,
    lock: Lockfile,
    evidence: Evidence,
    say: Say,
    stop: Stop,
    write: WriteJob,
) -> bool:
    """Run the job on the key's warm evaluator; False (recorded why) when it must run cold."""
    model = lock.body.model
    fresh = lock.body.operator is not None or lock.body.training is not None
    code = needs_code(lock)
    chain = lock.body.chain  # every stage's format counts, not the last stage's alone
    formats = [s.format for s in chain.stages] if chain is not None else []
    cold = next(
        (f for f in [model.format if model else "", *formats] if f not in WARM_FORMATS), None
    )
    if model is None or fresh or needs_pickle(lock) or code or cold is not None:
        if model is None or fresh:
            reason = OPERATOR_REASON
        elif code:
            reason = CODE_REASON
        elif needs_pickle(lock):
            reason = PICKLE_REASON
        else:
            reason = format_reason(str(cold))
        evidence.environment.update(warm=False, warm_cold_because=reason)
        return False
    from pinbench.evaluator.runners.consented import system_key

    # one model's runs to a process: a parser's bug its bytes reach stays with its own runs
    with pool.take((*key, system_key(lock)), start) as held:
        if held is None:
            reason = CLOSED_REASON if pool.closed else BUSY_REASON
            evidence.environment.update(warm=False, warm_cold_because=reason)
            return False
        n = held.served + 1
        job, out = held.jobs / str(n), held.out / str(n)
        evidence.environment.update(
            warm=held.served > 0, warm_served_before=held.served, **held.recorded()
        )
        try:  # a folder already there was not made by this pool: the process is dropped
            job.mkdir()
            out.mkdir()
            write(n, job, out, held)
            held.run_job(n, lock, evidence, say, stop)
        except EvaluationFailed:
            raise  # the model failed; the process answered as it should and is kept
        except BaseException:
            held.kill()  # anything else: this process is not trusted with another run
            raise
    return True
