"""Whether this server can sandbox a run, asked when the run is submitted (issue 83).

A run whose system under test runs in bubblewrap (``runners.sandbox``) on this machine is
refused when it is submitted, if the sandbox cannot start here: 503, naming what the server's
operator does about it, nothing queued. Never ``--sandbox none``: a server's runs are always
sandboxed (``sdk.local_decisions``). Whether it can start is found by starting one, as a run
would (``sandbox.probe``), and the answer is remembered for a while (``OK_S``, ``REFUSED_S``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from pinbench.errors import PinbenchError
from pinbench.evaluator.runners import sandbox
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace

SERVER_FIX = (
    "the server's operator installs bubblewrap from the system's packages (Debian: apt install "
    "bubblewrap; pinbench starts only the bwrap in the system's folders, owned by root, "
    "whatever the server's PATH), allows "
    "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu "
    "kernel.apparmor_restrict_unprivileged_userns=0) and restarts the server, or serves only "
    "the docker runner (pinbench serve --runners docker)"
)
"""What an operator does about a server that cannot start the sandbox."""
OK_S = 60.0
"""How long a sandbox that started is taken to start again without trying."""
REFUSED_S = 5.0
"""How long a sandbox that could not start is taken not to, before it is tried again."""
SANDBOXED_RUNNERS = ("local", "venv")
"""The runners whose workers run in bubblewrap (a container is a sandbox of its own)."""


class ServerCannotSandbox(PinbenchError):
    """A run needs the sandbox and it cannot start on this server (503): ``reason`` says why
    (bubblewrap's own words), ``fix`` what the server's operator does."""

    def __init__(self, *, runner: str, reason: str, fix: str) -> None:
        super().__init__(
            f"this server cannot start the sandbox its {runner} runner runs this lockfile in: "
            f"{reason}; nothing was queued. To fix it, {fix}"
        )
        self.runner = runner
        self.reason = reason
        self.fix = fix


def needs_sandbox(lock: Lockfile, runner: str, *, allow_code: bool) -> bool:
    """Whether a run of ``lock`` in ``runner`` on this server starts a sandboxed worker: every
    venv run; a local run of a model or chain, or of code (the local runner's own choice,
    ``runners.local.in_worker``: decision 310); never a docker run."""
    from pinbench.evaluator.runners.local import in_worker

    if runner == "venv":
        return True
    return runner == "local" and in_worker(lock, allow_code=allow_code)


def operator_fix(refusal: sandbox.SandboxUnavailable) -> str:
    """What the server's operator does about ``refusal``: its own fix where it names one for
    this machine, else ``SERVER_FIX``; never ``--sandbox none``, which a server refuses."""
    if "--sandbox" in refusal.fix:
        return SERVER_FIX
    return f"the server's operator does this and restarts the server: {refusal.fix}"


class SandboxCheck:
    """Whether the sandbox starts on this server, remembered: ``check`` refuses a run that
    needs it when it does not."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._lock = threading.Lock()
        self._until = 0.0
        self._refusal: sandbox.SandboxUnavailable | None = None

    def check(self, lock: Lockfile, runner: str, *, allow_code: bool) -> None:
        """Refuse (``ServerCannotSandbox``) a run of ``lock`` in ``runner`` that needs a
        sandbox this server cannot start."""
        if not needs_sandbox(lock, runner, allow_code=allow_code):
            return
        refusal = self.refusal()
        if refusal is not None:
            fix = operator_fix(refusal)
            raise ServerCannotSandbox(runner=runner, reason=refusal.reason, fix=fix)

    def refusal(self) -> sandbox.SandboxUnavailable | None:
        """Why the sandbox does not start here (None: it does), asked again once the last
        answer is older than ``OK_S`` or ``REFUSED_S``."""
        with self._lock:  # one probe at a time; the others wait for its answer, then use it
            if time.monotonic() >= self._until:
                self._refusal = self._tried()
                # from the answer, not the question: a probe that took its whole timeout to
                # fail is still fresh for those who waited on it
                done = time.monotonic()
                self._until = done + (OK_S if self._refusal is None else REFUSED_S)
            return self._refusal

    def _tried(self) -> sandbox.SandboxUnavailable | None:
        ws = self.ws
        try:
            sandbox.bwrap()
            sandbox.probe(ws.store.tmp, [ws.settings.home, ws.store.root, Path.home()])
        except sandbox.SandboxUnavailable as exc:
            return exc
        return None
