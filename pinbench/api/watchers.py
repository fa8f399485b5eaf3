"""Who waits on the runs a draining server finishes: it stops only once they have read how
their runs ended (or ``drain_grace_s`` has passed).

A client waiting on a run (``pinbench run``, ``Remote.wait``) polls ``GET /api/v1/runs/ID``
until the run is finished. A draining server used to stop the moment its last run was
recorded, so the client found no server and gave up ("cannot reach it", exit 3) on a run
that had succeeded. Now each run whose status was read while it was unfinished is watched;
at SIGTERM the watched runs held here are awaited, and the server stops once each has been
read finished (or the grace is over). A run nobody read while it ran is not waited for.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Final

MAX_WATCHED: Final = 4096
"""Runs remembered as watched at most (the least recently read go first)."""


class Watchers:
    """Runs whose unfinished status a client read here (this server's or not: ``expect``
    keeps those held here); thread-safe."""

    def __init__(self, max_watched: int = MAX_WATCHED) -> None:
        self.max_watched = max_watched
        self._lock = threading.Lock()
        self._told = threading.Condition(self._lock)
        """Notified when an awaited run is read finished."""
        self._watched: OrderedDict[str, None] = OrderedDict()
        self._awaited: set[str] = set()
        """At the drain: the watched runs held here, until each is read finished."""

    def saw(self, run_id: str, *, finished: bool) -> None:
        """A client read run ``run_id``'s status: ``finished`` or not (queued, running)."""
        with self._lock:
            if finished:
                self._watched.pop(run_id, None)
                if run_id in self._awaited:
                    self._awaited.discard(run_id)
                    self._told.notify_all()
                return
            self._watched[run_id] = None
            self._watched.move_to_end(run_id)
            while len(self._watched) > self.max_watched:
                self._watched.popitem(last=False)

    def expect(self, held: Iterable[str]) -> int:
        """At the drain: await those of ``held`` (the runs held here) that are watched; how
        many."""
        with self._lock:
            self._awaited = {run_id for run_id in held if run_id in self._watched}
            return len(self._awaited)

    def wait_told(self, timeout_s: float) -> int:
        """Wait until every awaited run was read finished, at most ``timeout_s``; how many
        were not."""
        with self._told:
            self._told.wait_for(lambda: not self._awaited, timeout=timeout_s)
            return len(self._awaited)
