"""Stopping an evaluation early, and why: a signal (Ctrl-C, ``kill``), a cancel, a time limit.

Nothing is ever raised at the moment a stop is asked for. LoadGen calls the system under test
from its own C++ frames (on the thread that called ``StartTest``, the main thread in a CLI
run); Python's default SIGINT handler raised ``KeyboardInterrupt`` there, the exception
unwound through LoadGen's test without joining LoadGen's threads, and those threads then
touched the SUT and sample library the ``finally`` had destroyed: the SIGSEGV of a Ctrl-C
(and no run recorded). So a stop is a request: every query after it is answered at once
without calling the model, LoadGen ends its test normally, and the evaluation raises the
stop's reason at the next safe point (``check``); the child process or container of an
isolated runner is stopped. LoadGen itself runs on a thread of its own (signal handlers only
ever run on the main thread) and gets a short grace to end its test; one that takes longer
(a long ``min_duration_ms``) is left to finish in the background (``Stop.left_running``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from pinbench.errors import PinbenchError, UserError

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunStopped(UserError):
    """The run was stopped before it finished: ``status`` is what its record says
    (``interrupted`` by a signal or a server stopping, ``cancelled`` on request)."""

    def __init__(self, *, status: str, reason: str, exit_code: int = 1) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.exit_code = exit_code


def interrupted_by(signum: int) -> RunStopped:
    """The stop a signal asks for; the CLI exits ``128 + signum`` (130 SIGINT, 143 SIGTERM)."""
    name = signal.Signals(signum).name
    return RunStopped(status="interrupted", reason=f"interrupted by {name}", exit_code=128 + signum)


class Stop:
    """A request to stop one evaluation, set from any thread or a signal handler; the first
    request wins."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._error: PinbenchError | None = None
        self._lock = threading.Lock()
        self.is_set = self._event.is_set
        """Cheap enough for LoadGen's hot path."""
        self.left_running = False
        """A LoadGen test was still ending when the stop was raised (it cannot be aborted):
        its thread still runs in this process."""

    def request(self, error: PinbenchError) -> bool:
        """Ask for a stop that ends the run with ``error``; False if one was asked for."""
        with self._lock:
            if self._error is not None:
                return False
            self._error = error
        self._event.set()
        return True

    @property
    def error(self) -> PinbenchError | None:
        return self._error

    def check(self) -> None:
        """Raise the requested stop's error, if any: call where stopping is safe."""
        if self._error is not None:
            raise self._error

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


@contextmanager
def stop_on_signals(stop: Stop) -> Iterator[Stop]:
    """While inside, SIGINT and SIGTERM request ``stop`` (never raise); the previous handlers
    come back after. The main thread only (Python delivers signals there)."""
    previous = {s: signal.getsignal(s) for s in SIGNALS}

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.request(interrupted_by(signum))

    for s in SIGNALS:
        signal.signal(s, handler)
    try:
        yield stop
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


@contextmanager
def time_limit(stop: Stop, seconds: float, error: PinbenchError) -> Iterator[None]:
    """A watchdog: past ``seconds`` inside, request ``stop`` with ``error``."""
    timer = threading.Timer(seconds, stop.request, args=(error,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
