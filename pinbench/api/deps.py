"""What handlers are given: the workspace, the server's settings, the run pool, the caller."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from litestar import Request
from litestar.datastructures import State

from pinbench.accounts import ANONYMOUS, PUBLIC_READER, AuthError, Principal, authenticate
from pinbench.api.cache import ReadCache
from pinbench.api.hosts import LOOPBACK
from pinbench.api.logs import event
from pinbench.api.observe import note_user
from pinbench.api.runpool import RunPool
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.registry import Registry
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.api.auth")
_TOKEN_ID = re.compile(r"pbt_([0-9a-f]{16})")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    public_read: bool = True
    """Reads (list, show, resolve, runs, blobs) need no token; else the 'read' scope."""
    max_upload_bytes: int = 2 * 1024**3
    run_workers: int = 1
    run_queue: int = 16
    allowed_hosts: tuple[str, ...] = LOOPBACK
    """Host names the server answers to (``pinbench serve --allowed-host``); see api/hosts.py."""
    allow_pickle: bool = False
    runners: tuple[str, ...] = ("local", "venv", "docker")
    """The runners queued runs may use (``serve --runners``)."""
    cluster: str | None = None
    """The Ray cluster whose agents run this server's runs placed ``on`` systems."""
    agent_url: str | None = None
    """This server's URL as the agents reach it (their blob downloads)."""
    warm: bool = False
    """``serve --warm``: keep one evaluator per environment between runs."""
    log_level: str = "info"
    """``serve --log-level``: debug, info, warning or error (``pinbench.api.logs``)."""
    log_format: str = "text"
    """``serve --log-format``: text or json (one JSON object a line)."""
    ready_min_free_mb: int = 512
    """``serve --ready-min-free-mb``: below this much free space the server is not ready."""
    """The operator lets ``trusted`` torch-pickle models run, in the docker runner only."""


def provide_ws(state: State) -> Workspace:
    ws: Workspace = state.ws
    return ws


def provide_registry(state: State) -> Registry:
    registry: Registry = state.registry
    return registry


def provide_hosting(state: State) -> Hosting:
    registry: Registry = state.registry
    return registry.hosting()


def provide_settings(state: State) -> ServerSettings:
    settings: ServerSettings = state.settings
    return settings


def provide_cache(state: State) -> ReadCache:
    cache: ReadCache = state.cache
    return cache


def provide_pool(state: State) -> RunPool:
    pool: RunPool = state.pool
    return pool


async def provide_principal(request: Request[Any, Any, Any], state: State) -> Principal:
    """The caller: from ``Authorization: Bearer TOKEN``, else anonymous (who may read when
    reads are public). A bad token is refused even where none is needed."""
    header = request.headers.get("authorization")
    if header is None:
        return await principal_for(state, None)
    client = request.client.host if request.client else None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        event(log, logging.WARNING, "authentication failed", client=client, reason="not Bearer")
        raise AuthError("the Authorization header must be 'Bearer <token>'")
    principal = await principal_for(state, token, client=client)
    state_of_request = request.scope.setdefault("state", {})
    note_user(state_of_request, principal.user, principal.token_id)
    return principal


def token_prefix(token: str) -> str | None:
    """The token's id as it may be logged (the 16 hex after ``pbt_``, as ``pinbench token
    list`` shows it), never its secret; None when the text does not start like a token."""
    match = _TOKEN_ID.match(token.strip())
    return match.group(1) if match else None


async def principal_for(state: State, token: str | None, *, client: str | None = None) -> Principal:
    """Who holds ``token`` (None: anonymous), with the read scope added when reads are public."""
    settings: ServerSettings = state.settings
    if token is None:
        return PUBLIC_READER if settings.public_read else ANONYMOUS
    ws: Workspace = state.ws

    def lookup() -> Principal:
        with ws.transaction() as session:
            return authenticate(session, token)

    try:
        principal: Principal = await anyio.to_thread.run_sync(lookup)
    except AuthError as exc:
        event(
            log,
            logging.WARNING,
            "authentication failed",
            client=client,
            token_id=token_prefix(token),
            reason=str(exc),
        )
        raise
    event(log, logging.DEBUG, "token used", user=principal.user, token_id=principal.token_id)
    if settings.public_read:
        return dataclasses.replace(principal, scopes=principal.scopes | {"read"})
    return principal
