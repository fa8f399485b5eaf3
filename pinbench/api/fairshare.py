"""The run queue's order: round robin across users, first in first out within a user.

A server process runs ``--run-workers`` runs at once; the rest wait. Taken in submission
order, one user's 17 queued runs would all run before another user's one. Here each free
worker takes the oldest waiting run of the user after the one served last, so each user
with runs waiting gets a turn in every round (``serve --runs-per-user`` caps how many one
user may have waiting or running at all).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")
RUNS_PER_USER = 8
"""Runs one user may have queued or running in one server process (``--runs-per-user``)."""


class FairQueue(Generic[T]):
    """Items by user; ``take`` gives the oldest item of the waiting user served longest ago
    (one never served first, then in order of arrival)."""

    def __init__(self) -> None:
        self._waiting: dict[str, deque[T]] = {}
        """Users with items waiting (in order of arrival), and their items."""
        self._served: dict[str, int] = {}
        """Each user's last turn (a count of turns); one user per account, so bounded."""
        self._turns = 0
        self._lock = threading.Lock()

    def put(self, user: str, item: T) -> None:
        with self._lock:
            self._waiting.setdefault(user, deque()).append(item)

    def take(self) -> T | None:
        """The next user's oldest item; None when nothing waits."""
        with self._lock:
            if not self._waiting:
                return None
            user = min(self._waiting, key=lambda who: self._served.get(who, -1))
            items = self._waiting[user]
            item = items.popleft()
            if not items:
                del self._waiting[user]
            self._turns += 1
            self._served[user] = self._turns
            return item

    def __len__(self) -> int:
        with self._lock:
            return sum(len(items) for items in self._waiting.values())
