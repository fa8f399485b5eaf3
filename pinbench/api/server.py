"""How ``pinbench serve`` hands its settings to uvicorn's worker processes: one environment
variable holding JSON, read by the app factory ``app_from_env``."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
from typing import TYPE_CHECKING

from pinbench.api import logs
from pinbench.api.app import create_app
from pinbench.api.deps import ServerSettings
from pinbench.api.observe import Observe
from pinbench.workspace import Workspace

SETTINGS_ENV = "PINBENCH_SERVER_SETTINGS"


def settings_to_env(**values: object) -> str:
    return json.dumps(dataclasses.asdict(ServerSettings(**values)))  # type: ignore[arg-type]


if TYPE_CHECKING:
    from pinbench.api.observe import ASGIApp


def app_from_env() -> ASGIApp:
    """The app a uvicorn worker serves: its logging set up, each request observed (the access
    log and the metrics: ``Observe`` wraps the whole app, so a request no route matches counts
    too)."""
    raw = os.environ.get(SETTINGS_ENV)
    settings = ServerSettings(**json.loads(raw)) if raw else ServerSettings()
    logs.configure(settings.log_level, settings.log_format)
    app = create_app(Workspace.from_env(), settings)
    observed = Observe(app, app.state.requests)
    # The modules and the app live as long as the worker: out of the collector's sight, a
    # full collection no longer walks them (tens of milliseconds a time, in a request's way).
    gc.freeze()
    return observed
