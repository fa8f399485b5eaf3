"""A worker's child process on this machine: started in its own session, its output relayed
(``process.Relay``), killed past its time limit or when its run is asked to stop, and whatever
it left in its process group killed with it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

from pinbench.evaluator.runners.process import POLL_S, Held, Relay, RunTimedOut
from pinbench.worker.job import Say
from pinbench.worker.stop import Stop


def run_child(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: str | None = None,
    timeout_s: float,
    say: Say,
    runner: str,
    on_timeout: Callable[[], None] | None = None,
    stop: Stop | None = None,
    pass_fds: Sequence[int] = (),
    on_start: Callable[[int], None] | None = None,
    peak: list[int] | None = None,
) -> tuple[int, list[str]]:
    """Run ``argv`` relaying its output; kill it (and call ``on_timeout``) past ``timeout_s``,
    or when ``stop`` is requested (then raise the stop's error, even if the child ended first:
    a terminal's Ctrl-C reaches the child too). ``pass_fds``: descriptors the child inherits;
    ``on_start``: called with the child's pid once it is started; ``peak``: where the largest
    resident size (bytes) of the child's processes is kept, read while it runs (``_reap``)."""
    stop = stop or Stop()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its group ends with it: ``_end_group``
        pass_fds=tuple(pass_fds),
    )
    assert proc.stdout is not None
    if on_start is not None:
        on_start(proc.pid)
    relay = Relay(proc.stdout, say)
    deadline = time.monotonic() + timeout_s
    try:
        return _wait(proc, relay, deadline, timeout_s, runner, on_timeout, stop, peak)
    finally:
        _end_group(proc.pid)


def _end_group(pid: int) -> None:
    """Kill what the child left in its process group (a process a run's code started to act
    after its worker ended, once the host had looked at what it changed; issue 63). A process
    that made a session of its own escapes this; a container does not outlive its run."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _wait(
    proc: subprocess.Popen[bytes],
    relay: Relay,
    deadline: float,
    timeout_s: float,
    runner: str,
    on_timeout: Callable[[], None] | None,
    stop: Stop,
    peak: list[int] | None = None,
) -> tuple[int, list[str]]:
    held = Held(runner)
    try:
        while True:
            try:
                wait_s = min(POLL_S, max(0.0, deadline - time.monotonic()))
                status = _reap(proc, wait_s, peak)
                break
            except subprocess.TimeoutExpired:
                if stop.is_set():
                    raise _Stopped() from None
                held.check(proc.pid)
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
    _end_group(proc.pid)  # before the relay's end: what it left may hold the child's output
    tail = relay.join()
    stop.check()
    return status, tail


def _reap(proc: subprocess.Popen[bytes], timeout_s: float, peak: list[int] | None) -> int:
    """``proc.wait(timeout_s)``, reading, while it waits, the largest resident size of the
    child's processes (``proc_tree.peak_rss_bytes``) into ``peak[0]``: ``wait4``'s figure
    leaves out a sandbox's processes (bubblewrap's first process in the sandbox reaps them)."""
    delay, end = 0.001, time.monotonic() + timeout_s
    while True:
        if peak is not None:
            from pinbench.evaluator.proc_tree import peak_rss_bytes

            seen = peak_rss_bytes(proc.pid)
            peak[:] = [max([seen, *peak])]
        status = proc.poll()
        if status is not None:
            return status
        if time.monotonic() >= end:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        time.sleep(min(delay, max(0.0, end - time.monotonic())))
        delay = min(delay * 2, 0.05)


class _Stopped(Exception):
    """Internal: leave the wait loop to kill the child and raise the stop's error."""
