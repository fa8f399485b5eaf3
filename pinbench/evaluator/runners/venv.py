"""The venv runner: the framework artifact's hash-pinned requirements, materialised by uv into
a virtual environment cached by its digest, run as a child process.

The child sees only that environment plus a copy of pinbench's own source of its own (never the
host's site-packages; ``process.worker_start``); its time is limited by the lockfile's
``limits.timeout_s``. Memory and CPU limits need a container (``--runner docker``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pinbench.artifacts.scratch import scratch_directory
from pinbench.environments.venv import materialise
from pinbench.errors import UserError
from pinbench.evaluator.job import Evidence, Say
from pinbench.evaluator.model_folder import FOLDER
from pinbench.evaluator.runners.local import model_folder, stage_folders, store_paths
from pinbench.evaluator.runners.process import (
    Relay,
    WorkerCrashed,
    collect,
    run_child,
    worker_start,
    write_job,
)
from pinbench.evaluator.source import evaluator_digest
from pinbench.evaluator.stop import Stop
from pinbench.evaluator.warm import ENDED, WarmEvaluator, WarmPool, run_warm
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.workspace import Workspace


def shared_cache() -> Path:
    """Environments are named by their digest, so every home can share them:
    ``PINBENCH_CACHE``, default ``~/.cache/pinbench``."""
    root = os.environ.get("PINBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pinbench"
    )
    return Path(root)


class VenvWarm(WarmEvaluator):
    """A warm evaluator in the environment's interpreter (``pinbench.evaluator.warm``)."""

    runner = "venv"

    def __init__(self, root: Path, python: Path, idle_s: float) -> None:
        super().__init__(root)
        start = worker_start(
            python, root, ["--serve", str(self.jobs), str(self.out), f"{idle_s:g}"]
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

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def died(self, tail: list[str]) -> Exception:
        code = self.proc.poll()
        return self.crashed(-1 if code is None else code, ENDED, tail)


def _strings(paths: dict[str, Path]) -> dict[str, str]:
    return {name: str(where) for name, where in paths.items()}


def _stages(ws: Workspace, lock: Lockfile, root: Path) -> dict[str, dict[str, str]]:
    """A chain's stages' folders (``stage_folders``) as a job names them."""
    return {name: _strings(files) for name, files in stage_folders(ws, lock, root).items()}


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
) -> None:
    env = lock.body.environment
    if env is None:
        raise UserError("the lockfile pins no framework environment for its platform")
    home = ws.settings.home
    venv = materialise(shared_cache() / "envs", env, say)
    evidence.environment = {
        "runner": "venv",
        "digest": venv.digest,
        "path": str(venv.path),
        "built": venv.built,
        "evaluator": evaluator_digest(),
    }
    data = _strings(store_paths(ws, lock, Kind.DATASET))
    held_out = _strings(store_paths(ws, lock, "validation"))
    cache = str(home / "cache" / "inputs")
    stop = stop or Stop()
    if warm is not None:

        def write(n: int, job: Path, out: Path) -> None:
            models = _strings(model_folder(ws, lock, job / FOLDER))
            write_job(
                job / "job.json",
                lock,
                models,
                data,
                cache,
                trace,
                allow_pickle,
                held_out,
                allow_code=allow_code,
                stages=_stages(ws, lock, job / "stages"),
            )

        def start(root: Path, idle_s: float) -> WarmEvaluator:
            return VenvWarm(root, venv.python, idle_s)

        key = ("venv", venv.digest, evaluator_digest())
        if run_warm(warm, key, start, lock, evidence, say, stop, write):
            return
    with scratch_directory(ws.store.tmp, "run") as tmp:
        job, out = tmp / "job.json", tmp / "out"
        out.mkdir()
        write_job(
            job,
            lock,
            _strings(model_folder(ws, lock, tmp / FOLDER)),
            data,
            cache=cache,
            trace=trace,
            allow_pickle=allow_pickle,
            validation=held_out,
            allow_code=allow_code,
            stages=_stages(ws, lock, tmp / "stages"),
        )
        child = worker_start(venv.python, tmp / "worker", [str(job), str(out)])
        status, tail = run_child(
            child.argv,
            env=child.env,
            cwd=child.cwd,
            timeout_s=lock.body.limits.timeout_s,
            say=say,
            runner="venv",
            stop=stop,
        )
        if status not in (0, 1):
            reason = "was killed" if status < 0 else "stopped"
            raise WorkerCrashed(runner="venv", status=status, reason=reason, tail=tail)
        collect("venv", out, lock, evidence, status=status, tail=tail)
