"""Waiting out a database that is away for a while (a restart, a failover): one call retried
while it raises ``DatabaseUnavailable``, after waits that double from ``Backoff.first_s`` up to
``Backoff.cap_s`` (so a database that comes back is used again within ``cap_s``), until it
succeeds or the caller gives up (decision 190).

What waits: a finished run's record, a queued run's start, a failed run's mark (``evaluator.
recording``, ``api.runpool``). The first failure is logged at warning level with its cause, then
one line every ``SAID_EVERY_S`` while it lasts, and one when it is over: a server waiting out a
20-second outage writes a few lines, not one per try.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pinbench.db.errors import DatabaseUnavailable

T = TypeVar("T")
log = logging.getLogger("pinbench.db")

SAID_EVERY_S = 30.0
"""How often a wait that goes on is said again in the log."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits of ``first_s``, doubled at each failed try, at most ``cap_s``."""

    first_s: float = 0.5
    cap_s: float = 5.0

    def delay(self, tries: int) -> float:
        """Seconds to wait after failed try ``tries`` (1 for the first)."""
        return float(min(self.cap_s, self.first_s * 2.0 ** min(tries - 1, 32)))


def _never() -> bool:
    return False


def until_available(
    call: Callable[[], T],
    *,
    what: str,
    backoff: Backoff | None = None,
    give_up: Callable[[], bool] = _never,
    between: Callable[[], None] | None = None,
    pause: Callable[[float], object] = time.sleep,
) -> T:
    """``call()``'s result, retried while it raises ``DatabaseUnavailable``. ``what`` names
    the work in the log; ``give_up``, asked after each failure, ends the wait (the last
    ``DatabaseUnavailable`` raised); ``between`` runs before each retry (a run refreshes its
    blobs there)."""
    policy = backoff or Backoff()
    started = said = time.monotonic()
    tries = 0
    while True:
        tries += 1
        try:
            result = call()
        except DatabaseUnavailable as exc:
            if give_up():
                log.warning("%s: gave up after %d tries: %s", what, tries, exc)
                raise
            wait = policy.delay(tries)
            now = time.monotonic()
            if tries == 1 or now - said >= SAID_EVERY_S:
                log.warning(
                    "%s waits for the database (%s): try %d, %.0f s so far, next in %.1f s",
                    what,
                    exc,
                    tries,
                    now - started,
                    wait,
                )
                said = now
            pause(wait)
            if between is not None:
                between()
            continue
        if tries > 1:
            log.warning(
                "%s: done once the database was back (%d tries over %.0f s)",
                what,
                tries,
                time.monotonic() - started,
            )
        return result
