"""How ``pinbench serve`` hands its settings to uvicorn's worker processes: one environment
variable holding JSON, read by the app factory ``app_from_env``.

A reverse proxy's headers are read here, not by uvicorn (``serve`` runs it with
``proxy_headers=False``), each only when the operator said to trust it, and then only from the
addresses in ``FORWARDED_ALLOW_IPS`` (default loopback): ``X-Forwarded-Proto`` names the scheme
(``serve --trust-forwarded-proto``; otherwise a plain-HTTP request could pass for https,
decision 150) and ``X-Forwarded-For`` the client (``serve --trust-forwarded-for``; otherwise
any local caller could name a new address with every request, and failed authentications,
counted per address, would never add up: decision 202). A header not trusted is dropped."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
from typing import TYPE_CHECKING

from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from pinbench.api import logs
from pinbench.api.app import create_app
from pinbench.api.deps import ServerSettings
from pinbench.api.observe import Observe
from pinbench.workspace import Workspace

SETTINGS_ENV = "PINBENCH_SERVER_SETTINGS"


def settings_to_env(**values: object) -> str:
    return json.dumps(dataclasses.asdict(ServerSettings(**values)))  # type: ignore[arg-type]


if TYPE_CHECKING:
    from pinbench.api.observe import ASGIApp, Receive, Scope, Send


def behind_proxy(
    app: ASGIApp, *, trust_forwarded_proto: bool, trust_forwarded_for: bool = False
) -> ASGIApp:
    """``app`` reading a trusted proxy's X-Forwarded-Proto only when ``trust_forwarded_proto``
    and its X-Forwarded-For only when ``trust_forwarded_for``; the others are dropped."""
    trusted = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
    proxied = ProxyHeadersMiddleware(app, trusted_hosts=trusted)
    dropped = {
        name
        for name, trust in (
            (b"x-forwarded-proto", trust_forwarded_proto),
            (b"x-forwarded-for", trust_forwarded_for),
        )
        if not trust
    }

    async def forwarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan" and dropped:
            headers = [(k, v) for k, v in scope["headers"] if k.lower() not in dropped]
            scope = {**scope, "headers": headers}
        await proxied(scope, receive, send)  # type: ignore[arg-type]

    return forwarded


def app_from_env() -> ASGIApp:
    """The app a uvicorn worker serves: its logging set up, each request observed (the access
    log and the metrics: ``Observe`` wraps the whole app, so a request no route matches counts
    too), behind ``behind_proxy`` (the client and scheme a trusted proxy forwards)."""
    from pinbench.api.parent_death import die_with_parent

    die_with_parent()  # a worker of ``serve --workers N`` ends with its parent
    raw = os.environ.get(SETTINGS_ENV)
    settings = ServerSettings(**json.loads(raw)) if raw else ServerSettings()
    logs.configure(settings.log_level, settings.log_format)
    app = create_app(Workspace.from_env(), settings)
    observed = Observe(app, app.state.requests)
    # The modules and the app live as long as the worker: out of the collector's sight, a
    # full collection no longer walks them (tens of milliseconds a time, in a request's way).
    gc.freeze()
    return behind_proxy(
        observed,
        trust_forwarded_proto=settings.trust_forwarded_proto,
        trust_forwarded_for=settings.trust_forwarded_for,
    )
