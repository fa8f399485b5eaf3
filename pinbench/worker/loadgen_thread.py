"""The one thread of a process that calls LoadGen's ``StartTest`` (decision 265).

LoadGen 6.0.17 logs through a logger of each thread that calls it. When such a thread exits,
its logger is handed to LoadGen's IO thread as an orphan, to be destroyed there; under load
that hand-over races, and the IO thread crashed the process with a segmentation fault in
``TlsLogger::SwapBuffers`` (a use after free). A new thread per test made one orphan per test:
three processes looping LoadGen tests, with two busy loops beside them on two cores, all
crashed within 82 s; on this one thread, which never exits, they ran 10 minutes each without
a crash (docs/benchmarks.md §15e).

So every test of the process runs here, one after another (LoadGen runs one test at a time
per process in any case: one global logger). A test left running after a stop
(``Stop.left_running``) delays the next one in the process until it ends; it is never run
beside it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable

Job = Callable[[], None]

_guard = threading.Lock()
_jobs: queue.SimpleQueue[Job] | None = None


def submit(job: Job) -> None:
    """Run ``job`` on the LoadGen thread, after the jobs submitted before it. ``job`` must
    not raise (the caller keeps its own outcome); an exception that escapes is dropped, so
    that the thread lives on for the next test."""
    global _jobs
    with _guard:
        if _jobs is None:
            _jobs = queue.SimpleQueue()
            thread = threading.Thread(
                target=_serve, args=(_jobs,), name="pinbench-loadgen", daemon=True
            )
            thread.start()
        _jobs.put(job)


def wait_idle(timeout: float) -> bool:
    """Wait until the jobs submitted so far have ended (a test left running after a stop
    among them); ``False`` if they have not after ``timeout`` seconds."""
    ended = threading.Event()
    submit(ended.set)
    return ended.wait(timeout)


def _serve(jobs: queue.SimpleQueue[Job]) -> None:
    while True:
        job = jobs.get()
        with contextlib.suppress(BaseException):  # the job reports its own outcome
            job()


def _forget() -> None:
    """In a forked child the thread does not exist: the child's first test starts its own."""
    global _guard, _jobs
    _guard = threading.Lock()
    _jobs = None


os.register_at_fork(after_in_child=_forget)
