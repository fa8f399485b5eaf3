"""The venv runner: the framework artifact's hash-pinned requirements, materialised by uv into
a virtual environment cached by its digest, run as a child process.

The child sees only that environment plus a copy of pinbench's own source of its own (never the
host's site-packages; ``process.worker_start``); its time is limited by the lockfile's
``limits.timeout_s``. Memory and CPU limits need a container (``--runner docker``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pinbench.environments.venv import materialise
from pinbench.errors import UserError
from pinbench.evaluator.runners.consented import adopt_cache, inputs_cache
from pinbench.evaluator.runners.local import JobSettings, hidden, run_in_worker, write_host_job
from pinbench.evaluator.runners.process import JOB, Relay, worker_start
from pinbench.evaluator.runners.sandbox import Confinement, record_sandbox
from pinbench.evaluator.warm import ENDED, WarmEvaluator, WarmPool, run_warm
from pinbench.registry.lockfile import Lockfile
from pinbench.training.distributed.placement import current
from pinbench.worker.job import Evidence, Say
from pinbench.worker.source import evaluator_digest
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace


def shared_cache() -> Path:
    """Environments are named by their digest, so every home can share them
    (``config.shared_cache``: ``PINBENCH_CACHE``, default ``~/.cache/pinbench``)."""
    from pinbench.config import shared_cache as named

    return named()


class VenvWarm(WarmEvaluator):
    """A warm evaluator in the environment's interpreter (``pinbench.evaluator.warm``)."""

    runner = "venv"

    def __init__(
        self, root: Path, python: Path, idle_s: float, hidden: list[Path], sandboxed: bool
    ) -> None:
        root = root.absolute()  # bubblewrap reads its binds from the worker's own folder
        super().__init__(root)
        self.confine = Confinement(root, ("out", "cache")) if sandboxed else None
        if self.confine is not None:
            self.confine.prepare()
            self.jobs.mkdir(exist_ok=True)
        start = worker_start(
            python,
            root,
            ["--serve", str(self.jobs), str(self.out), f"{idle_s:g}"],
            confine=self.confine,
            hidden=hidden,
        )
        self.proc = subprocess.Popen(
            start.argv,
            env=start.env,
            cwd=start.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert self.proc.stdout is not None
        self.relay = Relay(self.proc.stdout, self.route)

    @property
    def ident(self) -> str:
        return f"pid {self.proc.pid}"

    def host_pid(self) -> int | None:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def died(self, tail: list[str]) -> Exception:
        code = self.proc.poll()
        return self.crashed(-1 if code is None else code, ENDED, tail)


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
    env = lock.body.environment
    if env is None:
        raise UserError("the lockfile pins no framework environment for its platform")
    model = lock.body.model
    own = model.requirements if model is not None else None
    venv = materialise(shared_cache() / "envs", env, say, own)
    evidence.environment = {
        "runner": "venv",
        "digest": venv.digest,
        "path": str(venv.path),
        "built": venv.built,
        "evaluator": evaluator_digest(),
    }
    cache = inputs_cache(ws, lock)
    stop = stop or Stop()

    sandboxed = sandbox != "none"
    # a warm evaluator keeps LoadGen beside its model, in a sandbox without the network
    if warm is not None and not audit and current() is None:

        def start(root: Path, idle_s: float) -> WarmEvaluator:
            return VenvWarm(root, venv.python, idle_s, hidden(ws), sandboxed)

        warm_cache: list[tuple[Path, set[str]]] = []

        def write_warm(_: int, job: Path, __: Path, held: WarmEvaluator) -> None:
            confine = held.confine if isinstance(held, VenvWarm) else None
            copied = write_host_job(
                ws, lock, job / JOB, cache, trace, allow_pickle, allow_code, confine
            )
            if confine is not None:
                warm_cache.append((confine.root / "cache", copied))

        key = ("venv", venv.digest, evaluator_digest(), sandbox)
        if run_warm(warm, key, start, lock, evidence, say, stop, write_warm):
            record_sandbox(evidence.environment, sandboxed)
            for folder, copied in warm_cache:
                adopt_cache(ws, lock, folder, copied)
            return

    settings = JobSettings(cache, trace, allow_pickle, allow_code)
    run_in_worker(
        ws,
        lock,
        venv.python,
        evidence,
        say,
        stop,
        settings,
        "venv",
        venv.path,
        sandbox,
        audit=audit,
    )
