"""One LoadGen test, run so that a stop never waits on LoadGen: a system under test calling
``issue``, its samples already in memory, LoadGen on the process's one LoadGen thread
(``loadgen_thread``), and its summary read from its logs (``start_test``); ``metered_test``
reads the machine over it (``contention``): from the first query LoadGen issues to its test's
return, LoadGen's planning of its queries before the first left out. The scenarios
(``scenarios``) and generation (``generation.scenario``) both run their tests here.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg

from pinbench.worker import contention, loadgen_thread
from pinbench.worker.contention import Activity
from pinbench.worker.latency_metrics import (
    PRINTED,
    printed_throughputs,
    target_percentile_latency,
)
from pinbench.worker.loadgen_log import invalid_reasons, read_detail_log
from pinbench.worker.stop import Stop


def _nothing(*args: object) -> None:
    pass


STOP_GRACE_S = 2.0
"""After a stop, how long LoadGen may take to end its test (answered without the model)."""


class _Handover:
    """Queries LoadGen issued on its thread, answered on the calling thread. Each batch of
    queries is answered exactly once: by the caller, or, once the caller has gone (a stop
    past its grace), by LoadGen's thread itself (without the model: the stop is set)."""

    def __init__(self, issue: Callable[[list[Any]], None]) -> None:
        self._issue = issue
        self._work: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._gone = threading.Event()

    def issue(self, queries: list[Any]) -> None:
        """LoadGen's callback: hand the queries over and wait until they are answered."""
        batch = _Batch(queries)
        if self._gone.is_set():
            self._answer(batch)
            return
        self._work.put(batch)
        while not batch.done.wait(0.05):
            if self._gone.is_set():
                self._answer(batch)

    def serve(self, timeout: float) -> None:
        """On the calling thread: answer what LoadGen has issued, waiting up to ``timeout``."""
        try:
            batch = self._work.get(timeout=timeout)
        except queue.Empty:
            return
        if batch is not None:
            self._answer(batch)

    def wake(self) -> None:
        """The test has ended: a ``serve`` waiting for work returns now."""
        self._work.put(None)

    def leave(self) -> None:
        self._gone.set()

    def _answer(self, batch: _Batch) -> None:
        with batch.lock:
            if batch.taken:
                return
            batch.taken = True
        self._issue(batch.queries)  # never raises: failures are kept for after the test
        batch.done.set()


@dataclass
class _Batch:
    queries: list[Any]
    lock: threading.Lock = field(default_factory=threading.Lock)
    taken: bool = False
    done: threading.Event = field(default_factory=threading.Event)


def metered_test(
    issue: Callable[[list[Any]], None],
    count: int,
    settings: Any,
    log_dir: Path,
    stop: Stop,
    *,
    on_caller: bool = False,
    own_cpu: Callable[[], float] | None = None,
) -> tuple[dict[str, Any], Activity | str]:
    """``_start_test_stoppable`` with the machine read over its timed window
    (``contention.MachineMeter``; ``own_cpu``: the run's own CPU seconds, as ``own`` there):
    LoadGen's summary and what else the machine did. The window opens at the first query
    LoadGen issues (the reading on the meter's own thread: no query waits for it), not when
    the test starts: LoadGen plans its whole query schedule first (seconds for a long Server
    run), on this process's CPU. It closes when LoadGen's test returns, before its logs are
    read."""
    machine = contention.MachineMeter(own=own_cpu)
    machine.watch()

    opened: list[bool] = []

    def first(queries: list[Any]) -> None:
        if not opened:  # a list's truth, not a call: each query pays for nothing more
            opened.append(True)
            machine.begin()
        issue(queries)

    try:
        summary = _start_test_stoppable(
            first, count, settings, log_dir, stop, on_caller=on_caller, ended=machine.end
        )
    finally:
        machine.end()  # a failed test's meter lets its thread go
    return summary, machine.stop()


def _start_test_stoppable(
    issue: Callable[[list[Any]], None],
    count: int,
    settings: Any,
    log_dir: Path,
    stop: Stop,
    *,
    on_caller: bool = False,
    ended: Callable[[], None] = _nothing,
) -> dict[str, Any]:
    """``start_test`` on the process's LoadGen thread (``loadgen_thread``: one for every test,
    never a new one per test), so that no signal handler ever runs inside LoadGen's
    callbacks (Python runs them on the main thread only) and a stop need not wait for LoadGen:
    once a stop is requested LoadGen gets ``STOP_GRACE_S`` to end its test, after which the
    stop's error is raised and LoadGen's thread is left to finish (``stop.left_running``; a
    CLI then exits without tearing the interpreter down under it). ``on_caller``: the
    queries are answered on this thread (``_Handover``); ``ended``: as ``start_test``'s."""
    done = threading.Event()
    got: list[dict[str, Any]] = []
    failed: list[BaseException] = []
    handover = _Handover(issue) if on_caller else None

    def target() -> None:
        try:
            got.append(
                start_test(
                    handover.issue if handover else issue, count, settings, log_dir, ended=ended
                )
            )
        except BaseException as exc:
            failed.append(exc)
        finally:
            done.set()
            if handover is not None:
                handover.wake()

    def wait(seconds: float) -> None:
        if handover is not None:
            handover.serve(seconds)
        else:
            done.wait(seconds)

    loadgen_thread.submit(target)
    while not done.is_set() and not stop.is_set():
        wait(0.2)  # the test's end wakes it at once; a stop is seen within 0.2 s
    if stop.is_set():
        deadline = time.monotonic() + STOP_GRACE_S
        while not done.is_set() and time.monotonic() < deadline:
            wait(0.05)
        if not done.is_set():
            stop.left_running = True
            if handover is not None:
                handover.leave()
    stop.check()
    if failed:
        raise failed[0]
    return got[0]


def start_test(
    issue: Callable[[list[Any]], None],
    count: int,
    settings: Any,
    log_dir: Path,
    *,
    ended: Callable[[], None] = _nothing,
) -> dict[str, Any]:
    """One LoadGen test: a SUT calling ``issue``, ``count`` samples already in memory; return
    LoadGen's summary from its detail log in ``log_dir``. ``ended`` is called as LoadGen's
    test returns, before its logs are read."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False
    sut = lg.ConstructSUT(issue, _nothing)
    qsl = lg.ConstructQSL(count, count, _nothing, _nothing)
    try:
        lg.StartTestWithLogSettings(sut, qsl, settings, log_settings)
        ended()
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    summary = read_detail_log(log_dir / "mlperf_log_detail.txt")
    text = log_dir / "mlperf_log_summary.txt"
    printed = text.read_text(errors="replace") if text.exists() else ""
    at_target = target_percentile_latency(printed)
    if at_target is not None:
        summary["target_percentile_latency_ns"] = at_target
    throughputs = printed_throughputs(printed)
    if throughputs:
        summary[PRINTED] = throughputs
    reasons = invalid_reasons(summary)
    if reasons:
        summary["invalid_reasons"] = reasons
    return summary
