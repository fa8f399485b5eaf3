"""Failed authentications, counted per client address and per token id: past a limit in a
window, the server answers 429 with ``Retry-After`` before it looks at the token.

A bad token is refused either way; counting stops someone from trying tokens fast (300 in 6 s
went unnoticed in an operator's trial). Each key (``address 10.0.0.7``, ``token 0123...``)
keeps the times of its failures within the window, no more than the limit of them, and the
table holds at most ``max_keys`` keys, the least recently failed dropped first: addresses a
caller makes up cost a bounded amount of memory. Each failure is logged (logger
``pinbench.api.auth``) with the address and the token id, never the secret.

The table is per server process (``serve --workers N`` keeps N of them). Behind a reverse
proxy every caller has the proxy's address: then the per-address limit applies to all of
them together, and the per-token-id limit still applies to each token.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from pinbench.api.logs import event
from pinbench.api.problems import TooManyFailures

log = logging.getLogger("pinbench.api.auth")

FAILURES = 20
"""Failed authentications one address or token id may make within ``WINDOW_S`` (default)."""
WINDOW_S = 60
MAX_KEYS = 10_000
"""Addresses and token ids remembered at most (each holds at most ``FAILURES`` times)."""


def token_id_of(token: str | None) -> str | None:
    """The id part of ``pbt_<id>_<secret>`` (16 hex digits), else None; never the secret."""
    if token is None:
        return None
    head, _, rest = token.strip().partition("_")
    token_id, sep, _ = rest.partition("_")
    if head != "pbt" or not sep or len(token_id) != 16:
        return None
    if any(c not in "0123456789abcdef" for c in token_id):
        return None
    return token_id


@dataclass
class AuthThrottle:
    """``failures`` failed authentications per key within ``window_s`` seconds, then 429."""

    failures: int = FAILURES
    window_s: int = WINDOW_S
    max_keys: int = MAX_KEYS
    clock: Callable[[], float] = time.monotonic
    _seen: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def keys(address: str | None, token_id: str | None) -> list[str]:
        keys = [f"address {address}"] if address else []
        return [*keys, f"token {token_id}"] if token_id else keys

    def check(self, keys: list[str]) -> None:
        """Refuse (``TooManyFailures``) while any of ``keys`` has used up its failures."""
        now = self.clock()
        with self._lock:
            for key in keys:
                times = self._seen.get(key)
                if times is None:
                    continue
                while times and times[0] <= now - self.window_s:
                    times.popleft()
                if len(times) >= self.failures:
                    wait = max(1, math.ceil(times[0] + self.window_s - now))
                    raise TooManyFailures(
                        who=key,
                        failures=len(times),
                        window_s=self.window_s,
                        retry_after_s=wait,
                    )

    def failed(self, keys: list[str], reason: str) -> None:
        """Count a failed authentication against each key, and log it."""
        now = self.clock()
        with self._lock:
            for key in keys:
                times = self._seen.pop(key, None)
                if times is None:
                    times = deque(maxlen=self.failures)
                times.append(now)
                self._seen[key] = times  # most recent last
            while len(self._seen) > self.max_keys:
                self._seen.popitem(last=False)
        said = {k.partition(" ")[0]: k.partition(" ")[2] for k in keys}
        event(
            log,
            logging.WARNING,
            f"authentication failed ({', '.join(keys) or 'no address'}): {reason}",
            in_msg=("client", "token_id", "reason"),
            client=said.get("address"),
            token_id=said.get("token"),
            reason=reason,
        )

    def __len__(self) -> int:
        return len(self._seen)
