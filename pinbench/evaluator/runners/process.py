"""What the venv and docker runners share: the job file they hand the worker, a child process
whose progress is relayed and whose time is limited, and the results it leaves."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from pinbench.errors import UserError
from pinbench.evaluator.measure import Evidence, Say
from pinbench.evaluator.results import JobFile, read_results
from pinbench.evaluator.stop import Stop
from pinbench.registry.lockfile import Lockfile

TAIL_LINES = 20
POLL_S = 0.2
"""How often a child's wait looks at the run's stop request."""


class EvaluationFailed(UserError):
    """The evaluator ran and failed; its own message is the run's error."""

    def __init__(self, *, runner: str, error: str) -> None:
        super().__init__(error)
        self.runner = runner
        self.error = error


class RunTimedOut(UserError):
    def __init__(self, *, runner: str, timeout_s: float) -> None:
        super().__init__(
            f"the evaluation exceeded its time limit ({timeout_s:g} s, limits.timeout_s in the "
            f"lockfile) and was stopped ({runner} runner)"
        )
        self.runner = runner
        self.timeout_s = timeout_s


class WorkerCrashed(UserError):
    def __init__(self, *, runner: str, status: int, reason: str, tail: list[str]) -> None:
        text = f"the evaluator ({runner} runner) {reason} (exit status {status})"
        if tail:
            text += ":\n  " + "\n  ".join(tail)
        super().__init__(text)
        self.runner = runner
        self.status = status
        self.tail = tail


def write_job(
    path: Path,
    lock: Lockfile,
    model: dict[str, str],
    dataset: dict[str, str],
    cache: str | None = None,
    trace: str = "none",
    allow_pickle: bool = False,
) -> None:
    job = JobFile(
        lockfile=lock.canonical.decode("utf-8"),
        model=model,
        dataset=dataset,
        cache=cache,
        trace=trace,
        allow_pickle=allow_pickle,
    )
    path.write_bytes(msgspec.json.encode(job))


def collect(runner: str, out: Path, lock: Lockfile, evidence: Evidence) -> None:
    """Read the worker's results into ``evidence``; raise its error if the evaluation failed."""
    result, got = read_results(out, lock.digest.hex)
    evidence.frameworks.update(got.frameworks)
    evidence.details.update(got.details)
    evidence.metrics = got.metrics
    evidence.latencies, evidence.outputs, evidence.trace = got.latencies, got.outputs, got.trace
    evidence.environment["inside"] = dict(result.environment)
    if result.status == "failed":
        raise EvaluationFailed(runner=runner, error=result.error or "failed without a reason")


class Relay:
    """Forward a byte stream's lines (a pipe, or the chunks of a container's log) to ``say`` on
    a thread, keeping the last few for errors."""

    def __init__(self, stream: Iterable[bytes], say: Say) -> None:
        self.tail: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(stream, say), daemon=True)
        self._thread.start()

    def _pump(self, stream: Iterable[bytes], say: Say) -> None:
        for chunk in stream:
            for line in chunk.decode("utf-8", "replace").splitlines():
                self.tail = [*self.tail[-(TAIL_LINES - 1) :], line]
                say(line)

    def join(self) -> list[str]:
        self._thread.join(timeout=5)
        return self.tail


def run_child(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    timeout_s: float,
    say: Say,
    runner: str,
    on_timeout: Callable[[], None] | None = None,
    stop: Stop | None = None,
) -> tuple[int, list[str]]:
    """Run ``argv`` relaying its output; kill it (and call ``on_timeout``) past ``timeout_s``,
    or when ``stop`` is requested (then raise the stop's error, even if the child ended first:
    a terminal's Ctrl-C reaches the child too)."""
    stop = stop or Stop()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    relay = Relay(proc.stdout, say)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                status = proc.wait(timeout=min(POLL_S, max(0.0, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if stop.is_set():
                    raise _Stopped() from None
                if time.monotonic() >= deadline:
                    proc.kill()
                    if on_timeout is not None:
                        on_timeout()
                    proc.wait()
                    relay.join()
                    raise RunTimedOut(runner=runner, timeout_s=timeout_s) from None
    except BaseException:
        proc.kill()
        proc.wait()
        relay.join()
        stop.check()
        raise
    tail = relay.join()
    stop.check()
    return status, tail


class _Stopped(Exception):
    """Internal: leave the wait loop to kill the child and raise the stop's error."""
