"""Who may scrape ``/metrics``, decided without the database while it is down (decision 195).

On a ``--private`` server ``/metrics`` needs a token with the ``read`` scope, and a token is
looked up in the database: with the database down every scrape was refused (503), so the
documented alert ``pinbench_database_up == 0`` could never fire. Now a token the database has
accepted for ``/metrics`` is remembered in memory (keyed by its id and the sha256 of its
secret, as ``authenticate`` reads them, so that one token written with more or less whitespace
is one entry; never the token; the principal it stood for; when) for ``MEMORY_S``. Each scrape
still asks the database first, as any request does; a remembered token's question waits at
most ``DB_TIMEOUT_S`` (one at a time), and only when the database cannot answer
(``DatabaseUnavailable``, or no answer in time) is the remembered answer used. A token the
database refuses (unknown, revoked, its user disabled) is forgotten at once, every entry of its
id, and its failure counted as any failed authentication.

Nothing is opened wider: a caller without a token is what it always was (anonymous, which a
private server refuses with 401 without asking the database), a token never seen while the
database answered is refused (503) while it is down, and the memory serves ``/metrics``
only. What it can let in is a token revoked while the database was answering but not
scraped since, until the database is back or ``MEMORY_S`` has passed.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from litestar import Request
from litestar.datastructures import State

from pinbench.accounts import AuthError, Principal
from pinbench.api.deps import Runner, client_address, looked_up, provide_principal
from pinbench.api.observe import note_user
from pinbench.api.readiness import OneAtATime
from pinbench.api.throttle import token_id_of
from pinbench.api_tokens import authenticate, split_token
from pinbench.db.errors import DatabaseUnavailable

log = logging.getLogger("pinbench.api.auth")

MEMORY_S: Final = 24 * 3600
"""How long a token the database accepted for ``/metrics`` is let in while it is down."""
MAX_TOKENS: Final = 64
"""Tokens remembered at most (the least recently accepted go first): scrapers are few."""
DB_TIMEOUT_S: Final = 2.0
"""How long a remembered token's scrape waits for the database before using the memory."""


@dataclass
class Remembered:
    principal: Principal
    at: float
    """When the database last accepted the token (``clock``)."""
    once: OneAtATime = field(default_factory=OneAtATime)
    """This token's lookups, one at a time: a hung database holds one thread, not one a scrape."""


@dataclass
class ScrapeTokens:
    """Tokens the database accepted for ``/metrics``, by id and secret's sha256; thread-safe."""

    memory_s: float = MEMORY_S
    max_tokens: int = MAX_TOKENS
    clock: Callable[[], float] = time.monotonic
    _known: OrderedDict[tuple[str, str], Remembered] = field(
        default_factory=OrderedDict, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def _key(token: str) -> tuple[str, str] | None:
        """(token id, sha256 of its secret) as ``authenticate`` reads the token; None for a
        malformed one, which the database never accepts."""
        parts = split_token(token)
        if parts is None:
            return None
        token_id, secret = parts
        return token_id, hashlib.sha256(secret.encode()).hexdigest()

    def recall(self, token: str) -> Remembered | None:
        """The token's memory if the database accepted it within ``memory_s``."""
        key = self._key(token)
        if key is None:
            return None
        with self._lock:
            known = self._known.get(key)
            if known is None or self.clock() - known.at > self.memory_s:
                return None
            return known

    def remember(self, token: str, principal: Principal) -> None:
        key = self._key(token)
        if key is None:
            return
        with self._lock:
            known = self._known.pop(key, None)
            if known is None:
                known = Remembered(principal, self.clock())
            known.principal, known.at = principal, self.clock()
            self._known[key] = known  # most recent last
            while len(self._known) > self.max_tokens:
                self._known.popitem(last=False)

    def forget(self, token: str) -> None:
        """The database refused ``token``: every entry of its id goes (its secret, however
        written, or any other)."""
        key = self._key(token)
        if key is None:
            return
        with self._lock:
            for stale in [k for k in self._known if k[0] == key[0]]:
                del self._known[stale]


def bearer_token(request: Request[Any, Any, Any]) -> str | None:
    """The token of ``Authorization: Bearer TOKEN``; None without one (or with another
    scheme, which ``provide_principal`` refuses)."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token if scheme.lower() == "bearer" and token.strip() else None


async def metrics_principal(request: Request[Any, Any, Any], state: State) -> Principal:
    """The caller of ``/metrics``: as every request's (``provide_principal``), but a token
    remembered from an earlier scrape is let in while the database cannot answer."""
    token = bearer_token(request)
    if token is None:  # anonymous, or a header that is refused: no database either way
        return await provide_principal(request, state)
    tokens: ScrapeTokens = state.scrape_tokens
    known = tokens.recall(token)

    def lookup(rows: Any) -> Principal:
        return authenticate(rows, token)

    runner: Runner | None = None
    if known is not None:
        once = known.once

        async def runner(fn: Callable[[], Principal]) -> Principal:
            return await once.call(fn, DB_TIMEOUT_S)

    try:
        principal = await looked_up(
            state, client_address(request), token_id_of(token), lookup, runner
        )
    except AuthError:
        tokens.forget(token)
        raise
    except (DatabaseUnavailable, TimeoutError) as exc:
        if known is None:
            raise
        log.warning(  # the same line each scrape: written once a minute (api/logs.py)
            "metrics: the database cannot check token %s: let in, as the database accepted "
            "it within %.0f h",
            known.principal.token_id,
            tokens.memory_s / 3600,
        )
        log.debug("metrics: the database's failure: %s", exc)
        principal = known.principal
    else:
        if "read" in principal.scopes:
            tokens.remember(token, principal)
    note_user(request.scope.setdefault("state", {}), principal.user, principal.token_id)
    return principal
