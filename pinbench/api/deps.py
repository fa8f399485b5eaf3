"""What handlers are given: the workspace, the server's settings, the run pool, the caller."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from litestar import Request
from litestar.datastructures import State

from pinbench.accounts import ANONYMOUS, PUBLIC_READER, AuthError, Principal
from pinbench.api.cache import ReadCache
from pinbench.api.drain import DRAIN_S, GRACE_S
from pinbench.api.fairshare import RUNS_PER_USER
from pinbench.api.hosts import LOOPBACK
from pinbench.api.logs import event
from pinbench.api.observe import note_user
from pinbench.api.runpool import RunPool
from pinbench.api.study_runs import Drivers
from pinbench.api.throttle import FAILURES, AuthThrottle, token_id_of
from pinbench.api_tokens import authenticate
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.registry import Registry
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.db.plain import Rows

log = logging.getLogger("pinbench.api.auth")


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
    """The operator lets ``trusted`` torch-pickle models run, in the runner's sandbox."""
    allow_code: bool = False
    """The operator's ``serve --allow-code``: a model's processing code may run."""
    runners: tuple[str, ...] = ("local", "venv", "docker")
    """The runners queued runs may use (``serve --runners``)."""
    cluster: str | None = None
    """The Ray cluster whose agents run this server's runs placed ``on`` systems."""
    allow_spread: bool = False
    """The operator's ``serve --allow-spread``: a training's ranks may be spread over agents,
    whose sandboxes then keep the agents' network."""
    agent_url: str | None = None
    """This server's URL as the agents reach it (their blob downloads)."""
    warm: bool = False
    """``serve --warm``: keep one evaluator per environment between runs."""
    auth_failures: int = FAILURES
    """Failed authentications per client address and per token id a minute, then 429."""
    runs_per_user: int = RUNS_PER_USER
    """Runs one user may have queued or running in a server process (``--runs-per-user``)."""
    drain_s: int = DRAIN_S
    """On SIGTERM, how long running runs may take to finish (``--drain-seconds``)."""
    drain_grace_s: int = GRACE_S
    """Then, how long their waiting clients may take to read how they ended
    (``--drain-grace-seconds``)."""
    log_level: str = "info"
    """``serve --log-level``: debug, info, warning or error (``pinbench.api.logs``)."""
    log_format: str = "text"
    """``serve --log-format``: text or json (one JSON object a line)."""
    ready_min_free_mb: int = 512
    """``serve --ready-min-free-mb``: below this much free space the server is not ready."""
    metrics_folder: str | None = None
    """``serve --workers N`` (N > 1): where the workers share their ``/metrics`` numbers
    (``api.worker_metrics``); None with one worker."""
    trust_forwarded_proto: bool = False
    """``serve --trust-forwarded-proto``: take the scheme from a trusted proxy's
    ``X-Forwarded-Proto`` (the UI's origin check, its cookie's Secure flag); else it is
    dropped (api/server.py)."""
    trust_forwarded_for: bool = False
    """``serve --trust-forwarded-for``: take the client's address from a trusted proxy's
    ``X-Forwarded-For`` (what failed authentications are counted against); else it is
    dropped and the address is the connection's (api/server.py, decision 202)."""


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


def provide_studies(state: State) -> Drivers:
    drivers: Drivers = state.studies
    return drivers


async def provide_principal(request: Request[Any, Any, Any], state: State) -> Principal:
    """The caller: from ``Authorization: Bearer TOKEN``, else anonymous (who may read when
    reads are public). A bad token is refused even where none is needed."""
    header = request.headers.get("authorization")
    address = client_address(request)
    if header is None:
        return await principal_for(state, None, address)
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        throttle: AuthThrottle = state.throttle
        keys = throttle.keys(address, None)
        throttle.check(keys)
        throttle.failed(keys, "the Authorization header is not 'Bearer <token>'")
        raise AuthError("the Authorization header must be 'Bearer <token>'")
    principal = await principal_for(state, token, address)
    note_user(request.scope.setdefault("state", {}), principal.user, principal.token_id)
    return principal


def client_address(request: Request[Any, Any, Any]) -> str | None:
    """The address the connection came from (a reverse proxy's, behind one), or the one a
    trusted proxy forwards (``serve --trust-forwarded-for``)."""
    return request.client.host if request.client is not None else None


async def principal_for(state: State, token: str | None, address: str | None) -> Principal:
    """Who holds ``token`` (None: anonymous), with the read scope added when reads are public.
    Failed authentications count against ``address``: past the server's limit the caller is
    refused (429) before the token is looked at (``api/throttle.py``)."""
    settings: ServerSettings = state.settings
    if token is None:
        return PUBLIC_READER if settings.public_read else ANONYMOUS
    return await looked_up(
        state, address, token_id_of(token), lambda rows: authenticate(rows, token)
    )


Runner = Callable[[Callable[[], Principal]], Awaitable[Principal]]
"""How a blocking lookup is run off the event loop (default: a worker thread of anyio's)."""


async def looked_up(
    state: State,
    address: str | None,
    key_id: str | None,
    lookup: Callable[[Rows], Principal],
    runner: Runner | None = None,
) -> Principal:
    """The principal ``lookup`` finds in one transaction (in a worker thread, or through
    ``runner``), its failures counted against ``address`` (``key_id``, a token's or a UI
    session's id, only where the address is unknown: ``api/throttle.py``), with the read
    scope added when reads are public."""
    settings: ServerSettings = state.settings
    ws: Workspace = state.ws
    throttle: AuthThrottle = state.throttle
    keys = throttle.keys(address, key_id)
    throttle.check(keys)

    def run() -> Principal:
        with ws.reads() as rows:
            return lookup(rows)

    try:
        principal: Principal = await (runner or anyio.to_thread.run_sync)(run)
    except AuthError as exc:
        throttle.failed(keys, str(exc), token_id=key_id)  # logged: address, token id
        raise
    event(log, logging.DEBUG, "token used", user=principal.user, token_id=principal.token_id)
    if settings.public_read:
        return dataclasses.replace(principal, scopes=principal.scopes | {"read"})
    return principal
