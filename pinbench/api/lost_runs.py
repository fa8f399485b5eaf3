"""Runs whose system a server's pool saw lost (``SystemLost``): what a study's driver asks
before it runs a cell again (never a run's error text, which a worker may write)."""

from __future__ import annotations

import threading

KEPT = 10_000
"""Lost runs remembered, the oldest forgotten first."""


class LostRuns:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, str] = {}

    def add(self, run_id: str, system: str) -> None:
        """Run ``run_id`` was lost with ``system``."""
        with self._lock:
            self._runs[run_id] = system
            while len(self._runs) > KEPT:
                self._runs.pop(next(iter(self._runs)))

    def take(self, run_id: str) -> str | None:
        """The system run ``run_id`` was lost with (once), or None."""
        with self._lock:
            return self._runs.pop(run_id, None)
