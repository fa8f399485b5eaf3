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
    outage: type[Exception] = DatabaseUnavailable,
    of: str = "the database",
    say: Callable[[str], None] | None = None,
) -> T:
    """``call()``'s result, retried while it raises ``outage`` (``DatabaseUnavailable``; a
    run's blobs wait out the object store's, decision 284). ``what`` names the work in the
    log, ``of`` what is waited for; ``give_up``, asked after each failure, ends the wait (the
    last ``outage`` raised); ``between`` runs before each retry (a run refreshes its blobs
    there); ``say``: where each line goes instead of the log (a run's progress: the terminal
    of a local run, which the log's last-resort handler wrote to as well, so each line came
    twice; a server's run pool, which logs it with the run's id)."""
    policy = backoff or Backoff()
    started = said = time.monotonic()
    tries = 0

    def tell(text: str) -> None:
        if say is not None:
            say(text)
        else:
            log.warning("%s", text)

    while True:
        tries += 1
        try:
            result = call()
        except outage as exc:
            if give_up():
                tell(f"{what}: gave up waiting for {of} after {tries} tries: {exc}")
                raise
            wait = policy.delay(tries)
            now = time.monotonic()
            if tries == 1 or now - said >= SAID_EVERY_S:
                tell(
                    f"{what} waits for {of} ({exc}): try {tries}, {now - started:.0f} s so "
                    f"far, next in {wait:.1f} s"
                )
                said = now
            pause(wait)
            if between is not None:
                between()
            continue
        if tries > 1:
            tell(
                f"{what}: done once {of} was back ({tries} tries over "
                f"{time.monotonic() - started:.0f} s)"
            )
        return result
