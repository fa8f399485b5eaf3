"""What handlers are given: the workspace, the server's settings, the run pool, the caller."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from litestar import Request
from litestar.datastructures import State

from pinbench.accounts import ANONYMOUS, PUBLIC_READER, AuthError, Principal, authenticate
from pinbench.api.cache import ReadCache
from pinbench.api.hosts import LOOPBACK
from pinbench.api.runpool import RunPool
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.registry import Registry
from pinbench.workspace import Workspace


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
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("the Authorization header must be 'Bearer <token>'")
    return await principal_for(state, token)


async def principal_for(state: State, token: str | None) -> Principal:
    """Who holds ``token`` (None: anonymous), with the read scope added when reads are public."""
    settings: ServerSettings = state.settings
    if token is None:
        return PUBLIC_READER if settings.public_read else ANONYMOUS
    ws: Workspace = state.ws

    def lookup() -> Principal:
        with ws.transaction() as session:
            return authenticate(session, token)

    principal: Principal = await anyio.to_thread.run_sync(lookup)
    if settings.public_read:
        return dataclasses.replace(principal, scopes=principal.scopes | {"read"})
    return principal
