"""The server's bounded run queue: a fixed number of worker threads, a fixed queue length.

A submitted run is recorded ``queued`` at once (so its status can be asked for), then run by
a worker with ``run_lockfile``, which records the outcome. When the queue is full a submit is
refused (HTTP 503). Runs still queued or running when the server stops are marked
``interrupted`` (``pinbench serve`` also marks any it finds unfinished before it starts:
with several server processes, each pool only ever touches its own runs).
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from pinbench.api.problems import QueueFull
from pinbench.errors import PinbenchError
from pinbench.evaluator.run import abandon_unfinished, queue_run, run_lockfile, set_status
from pinbench.evaluator.runners import choose_runner
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.api.runs")
STOPPED = "the server stopped before this run finished"


class RunPool:
    def __init__(self, ws: Workspace, *, workers: int, queue: int) -> None:
        self.ws = ws
        self.capacity = workers + queue
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="pinbench-run")
        self._lock = threading.Lock()
        self._mine: set[str] = set()
        """Runs submitted here and not finished: queued or running."""
        self.progress: dict[str, str] = {}
        """A running run's latest progress line (what ``pinbench run`` would print)."""

    def submit(self, lock: Lockfile, runner: str, trace: str = "none") -> str:
        runner = choose_runner(runner, lock)  # once: 'auto' asks the Docker Engine
        run_id = str(uuid.uuid4())
        with self._lock:
            if len(self._mine) >= self.capacity:
                raise QueueFull(queued=len(self._mine))
            self._mine.add(run_id)
        try:
            queue_run(self.ws, lock, runner=runner, run_id=run_id, trace=trace)
            self._executor.submit(self._execute, run_id, lock, runner, trace)
        except BaseException:
            with self._lock:
                self._mine.discard(run_id)
            raise
        return run_id

    def _execute(self, run_id: str, lock: Lockfile, runner: str, trace: str) -> None:
        try:
            set_status(self.ws, run_id, "running")
            run_lockfile(
                self.ws,
                lock,
                runner=runner,
                run_id=run_id,
                trace=trace,
                say=lambda text: self._say(run_id, text),
            )
        except PinbenchError as exc:
            log.info("run %s failed: %s", run_id[:8], exc)
        except BaseException:
            log.exception("run %s failed", run_id[:8])
        finally:
            with self._lock:
                self._mine.discard(run_id)
                self.progress.pop(run_id, None)

    def _say(self, run_id: str, text: str) -> None:
        log.info("run %s: %s", run_id[:8], text)
        self.progress[run_id] = text

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            mine = sorted(self._mine)
        abandon_unfinished(self.ws, STOPPED, only=mine)
