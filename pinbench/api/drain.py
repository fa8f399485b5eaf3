"""SIGTERM drains a server process: no new run, the running ones finish, their waiting
clients read how they ended, then it stops.

uvicorn stops a server on SIGTERM at once: it closes its socket, and the run pool's ``close``
interrupts whatever runs. A rolling upgrade (a new server started beside the old, the old
sent SIGTERM) lost every running run so. Here the app's lifespan puts a handler in front of
uvicorn's: on SIGTERM the pool drains (``RunPool.drain``: new runs are refused with 503 and
``Retry-After``, runs still queued are marked interrupted so their callers can submit them
elsewhere), the server keeps answering (status, results, reads), and once no run is running,
or ``drain_s`` seconds have passed (then what still runs is stopped and recorded
interrupted), it waits up to ``grace_s`` more for the clients that were waiting on those runs
to read how they ended (``api/watchers.py``): a client polling a run that succeeded used to
find no server and give up (exit 3). Then uvicorn's own handler is called: the server stops
as it did before. A second SIGTERM, or SIGINT, stops it at once.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from pinbench.api.watchers import Watchers

log = logging.getLogger("pinbench.api.drain")
DRAIN_S = 30
"""On SIGTERM, how long running runs may take to finish (``serve --drain-seconds``)."""
GRACE_S = 10
"""Then, how long clients waiting on them may take to read how they ended (a waiting
``pinbench run`` polls every 0.5 s; ``serve --drain-grace-seconds``)."""

Handler = Callable[[int, FrameType | None], Any]


class Drainable(Protocol):
    def drain(self) -> int: ...

    def wait_running(self, timeout_s: float) -> bool: ...

    def stop_running(self, reason: str = ...) -> None: ...

    @property
    def watchers(self) -> Watchers: ...


def install(pool: Drainable, drain_s: float, grace_s: float = GRACE_S) -> None:
    """Put the drain in front of the SIGTERM handler (uvicorn's); only in the main thread
    (where signals are handled), and only with a drain to do (``drain_s`` > 0)."""
    if drain_s <= 0 or threading.current_thread() is not threading.main_thread():
        return
    after = signal.getsignal(signal.SIGTERM)
    if not callable(after):
        return  # no handler of uvicorn's to hand over to: stop as before
    started = threading.Event()

    def stop_after_drain(signum: int, frame: FrameType | None) -> None:
        if started.is_set():  # a second SIGTERM: stop now
            after(signum, frame)
            return
        started.set()
        threading.Thread(
            target=_drain,
            args=(pool, drain_s, grace_s, after, signum),
            name="pinbench-drain",
            daemon=True,
        ).start()

    signal.signal(signal.SIGTERM, stop_after_drain)


def _drain(pool: Drainable, drain_s: float, grace_s: float, after: Handler, signum: int) -> None:
    try:
        dropped = pool.drain()
        log.warning(
            "SIGTERM: draining (no new runs; %d queued run(s) marked interrupted); "
            "waiting up to %.0f s for running runs",
            dropped,
            drain_s,
        )
        if pool.wait_running(drain_s):
            log.info("drained: no run is running")
        else:
            log.warning("runs still running after %.0f s: stopping them (interrupted)", drain_s)
            from pinbench.api.outage import drain_ran_out

            pool.stop_running(drain_ran_out(drain_s))
        untold = pool.watchers.wait_told(grace_s)
        if untold:
            log.warning(
                "%d client(s) waiting on a run did not read how it ended within %.0f s",
                untold,
                grace_s,
            )
        log.info("drained: stopping")
    except Exception:  # the server must stop whatever went wrong here
        log.exception("draining failed; stopping")
    finally:
        after(signum, None)
