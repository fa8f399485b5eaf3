"""Runners: where a verified lockfile is evaluated.

``local`` runs in this interpreter; ``venv`` in a uv-built environment pinned by the framework
artifact's hashed requirements; ``docker`` in a container whose image is pinned by digest.
Each fills the run's evidence, its ``environment`` provenance first.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pinbench.errors import UserError
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.job import Evidence
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.evaluator.warm import WarmPool

Say = Callable[[str], None]
RUNNERS = {
    "local": "pinbench.evaluator.runners.local",
    "venv": "pinbench.evaluator.runners.venv",
    "docker": "pinbench.evaluator.runners.docker",
}


class Runner(Protocol):
    def __call__(
        self,
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
        """Evaluate the (already verified) lockfile at trace level ``trace``, filling
        ``evidence``; raise on failure. ``allow_pickle``: the caller's decision to let a
        ``trusted`` torch-pickle model be unpickled (``pinbench.evaluator.policy``);
        ``allow_code``: to let the model's processing code run (``pinbench.processing``). Past
        ``stop`` (a signal, a cancel) or the lockfile's ``limits.timeout_s`` the evaluation
        stops (a child process or container is killed) and the stop's error is raised.
        ``warm``: the venv and docker runners may run it on a warm evaluator of that pool
        (``pinbench.evaluator.warm``); the local runner already runs in its caller's process.
        ``sandbox``: ``bwrap`` (every worker process in the sandbox, ``runners.sandbox``) or
        ``none`` (the run is recorded unsandboxed); a container is a sandbox of its own.
        ``audit``: the host keeps the clock and audits the run (``host_clock``; every runner on
        this machine, ``run.check_audit``), as it does for every run with code."""
        ...


class UnknownRunner(UserError):
    def __init__(self, *, runner: str) -> None:
        super().__init__(f"no runner {runner!r}; runners: auto, {', '.join(RUNNERS)}")
        self.runner = runner


def choose_runner(name: str, lock: Lockfile) -> str:
    """``auto``: docker when the lockfile pins an image and a Docker Engine answers, else venv
    (the embedded default; always for a model with requirements of its own); any other name
    is taken as given."""
    if name != "auto":
        return name
    env, model = lock.body.environment, lock.body.model
    if model is not None and model.requirements:  # only the venv runner installs them
        return "venv"
    if env is not None and env.image is not None:
        from pinbench.images.engine import DockerUnavailable, connect

        try:
            connect(timeout=5).close()
            return "docker"
        except DockerUnavailable:
            pass
    return "venv"


def runner_named(name: str) -> Runner:
    if name not in RUNNERS:
        raise UnknownRunner(runner=name)
    run: Runner = importlib.import_module(RUNNERS[name]).run
    return run
