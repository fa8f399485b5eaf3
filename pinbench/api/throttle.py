"""Failed authentications, counted per client address: past a limit in a window, the server
answers 429 with ``Retry-After`` before it looks at the token.

A bad token is refused either way; counting stops someone from trying tokens fast (300 in 6 s
went unnoticed in an operator's trial). Each key (``address 10.0.0.7``) keeps the times of its
failures within the window, no more than the limit of them, and the table holds at most
``max_keys`` keys, the least recently failed dropped first: addresses a caller makes up cost a
bounded amount of memory. Each failure is logged (logger ``pinbench.api.auth``) with the
address and the token id, never the secret.

A token id is public (it is in logs and listings), so it is no key of its own: a counter of the
id alone let anyone who sent five wrong secrets with it lock its holder out for a minute from
every address. Failures with an id count against the id *at the caller's address*, which is
what the address's own counter already counts (every failure from it), so that counter is the
one kept: an attacker holds back only their own address, and guessing stays bounded by it (a
secret is 32 random bytes). Only where the address is unknown is the id the key (decision 202).

The table is per server process (``serve --workers N`` keeps N of them). Behind a reverse
proxy every caller has the proxy's address, and the per-address limit applies to all of them
together, unless the server trusts the proxy's X-Forwarded-For (``serve
--trust-forwarded-for``, ``api/server.py``).
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
        """What a failure from ``address`` with ``token_id`` counts against: the address (and
        with it the id at that address); the id alone only where no address is known."""
        if address:
            return [f"address {address}"]
        return [f"token {token_id}"] if token_id else []

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

    def failed(self, keys: list[str], reason: str, *, token_id: str | None = None) -> None:
        """Count a failed authentication against each key, and log it with ``token_id`` (the
        id the caller gave, never its secret)."""
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
        address = next((k.partition(" ")[2] for k in keys if k.startswith("address ")), None)
        said = [f"address {address}"] if address else []
        said += [f"token {token_id}"] if token_id else []
        event(
            log,
            logging.WARNING,
            f"authentication failed ({', '.join(said) or 'no address'}): {reason}",
            in_msg=("client", "token_id", "reason"),
            client=address,
            token_id=token_id,
            reason=reason,
        )

    def __len__(self) -> int:
        return len(self._seen)
