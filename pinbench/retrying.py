"""How the HTTP client waits out a server that is away for a moment (a restart, a proxy's
502/503/504, a dropped connection): which requests may be sent again, how long to wait before
each try, and when to give up.

Only requests that are safe to send twice are retried (``RETRIED_METHODS``): reads, and the
content-addressed ``PUT`` of a lockfile. A ``POST`` (publish, lock, queue a run) or a
``DELETE`` (cancel) never is: the first may have been done, and a second would do it again or
be refused for it. Waits grow exponentially with full jitter (so many clients spread out), a
server's ``Retry-After`` is honoured up to ``cap_s``, and the tries of one request stop once
``total_s`` would be passed. Nothing here does I/O: the client passes the clock and the dice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from pinbench.bounds import RETRY_S
from pinbench.errors import InvalidValue

RETRIED_METHODS = frozenset({"GET", "HEAD", "PUT"})
RETRIED_STATUSES = frozenset({502, 503, 504})
ENV = "PINBENCH_RETRY_S"


class InvalidRetryTime(InvalidValue):
    what = ENV


@dataclass(frozen=True, slots=True)
class Retrying:
    """``total_s``: how long one request may keep being retried (0: never); ``first_s``: the
    first wait's upper end, doubled at each try up to ``cap_s``, which also bounds the
    ``Retry-After`` a server may ask for."""

    total_s: float = 120.0
    first_s: float = 0.5
    cap_s: float = 15.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Retrying:
        """``PINBENCH_RETRY_S`` (seconds, bounded by ``bounds.RETRY_S``), else the default."""
        text = environ.get(ENV, "").strip()
        if not text:
            return cls()
        try:
            seconds = float(text)
        except ValueError:
            raise InvalidRetryTime(text=text, reason="not a number of seconds") from None
        if not RETRY_S.holds(seconds):
            raise InvalidRetryTime(text=text, reason=RETRY_S.refusal(ENV, seconds))
        return cls(total_s=seconds)

    def retries(self, method: str) -> bool:
        return self.total_s > 0 and method.upper() in RETRIED_METHODS

    def delay(self, attempt: int, retry_after: float | None, dice: Callable[[], float]) -> float:
        """Seconds to wait before try ``attempt + 1`` (``attempt`` >= 1 failed already):
        full jitter over ``first_s * 2**(attempt-1)`` (at most ``cap_s``), or the server's
        ``Retry-After`` (at most ``cap_s``) when that is longer. ``dice``: uniform in [0, 1)."""
        ceiling = min(self.cap_s, self.first_s * float(2 ** min(attempt - 1, 32)))
        wait = ceiling * dice()
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.cap_s))
        return wait


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` header in seconds (delta-seconds or an HTTP date); None when absent
    or unreadable (then the client's own backoff applies)."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(min(int(text[:9]), 10**8))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def dice() -> float:
    """The jitter's randomness (a module function so a caller may pass its own)."""
    return random.random()  # jitter, not a secret
