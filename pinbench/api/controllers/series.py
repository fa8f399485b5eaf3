"""Series, their thresholds, the gate and alerts (``pinbench.series``; decisions 250-253).

Reading needs the ``read`` scope. Setting a threshold and acknowledging an alert follow how the
registry grants publishing: the ``publish`` scope and membership of the model's namespace (an
admin's ``admin`` scope for a name without one). Gating a recorded run records alerts, so it
needs the ``run`` scope.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, get, post
from litestar.params import Parameter

from pinbench.accounts import Principal
from pinbench.api.schemas import Body
from pinbench.workspace import Workspace


class ThresholdRequest(Body):
    metric: str
    test: str
    direction: str | None = None
    """Which way is better; default: lower for *_ns, *_ms, *_s, *_bytes, else higher."""
    max_change: float | None = None
    alpha: float = 0.01
    window: int = 10
    min_runs: int = 3
    tolerance: float | None = None


class GateRequest(Body):
    run: str
    """A recorded run's id (or unique prefix): the candidate."""
    series: str | None = None
    """The series to judge against; refused when the run is not in it. Default: its own."""


class SeriesController(Controller):
    path = "/api/v1/series"
    tags = ["series"]  # noqa: RUF012

    @get("/", sync_to_thread=True, summary="Every series", operation_id="listSeries")
    def list_series(self, ws: Workspace, principal: Principal) -> list[dict[str, Any]]:
        from pinbench.series.members import list_series

        principal.require("read")
        return list_series(ws)

    @get(
        "/{name:path}",
        sync_to_thread=True,
        summary="One series: each run's metrics, the pins that moved, the thresholds",
        operation_id="showSeries",
    )
    def show(self, ws: Workspace, principal: Principal, name: str) -> dict[str, Any]:
        from pinbench.series.members import detail, resolve
        from pinbench.series.thresholds import thresholds

        principal.require("read")
        key, members = resolve(ws, name.lstrip("/"))
        shown = detail(key, members)
        shown["thresholds"] = [v.to_json() for v in thresholds(ws, key)]
        return shown


class ThresholdController(Controller):
    path = "/api/v1/series-thresholds"
    tags = ["series"]  # noqa: RUF012

    @get(
        "/{name:path}",
        sync_to_thread=True,
        summary="A series' thresholds (current, or every version with all=true)",
        operation_id="listThresholds",
    )
    def list_thresholds(
        self, ws: Workspace, principal: Principal, name: str, all: bool = False
    ) -> list[dict[str, Any]]:
        from pinbench.series.members import resolve
        from pinbench.series.thresholds import thresholds

        principal.require("read")
        key, _ = resolve(ws, name.lstrip("/"))
        return [v.to_json() for v in thresholds(ws, key, every_version=all)]

    @post(
        "/{name:path}",
        sync_to_thread=True,
        status_code=200,
        summary="Set a series' threshold on a metric (a new version)",
        description="Needs the `publish` scope and membership of the model's namespace.",
        operation_id="setThreshold",
    )
    def set_threshold(
        self, ws: Workspace, principal: Principal, name: str, data: ThresholdRequest
    ) -> dict[str, Any]:
        from pinbench.series.members import resolve
        from pinbench.series.stats import Threshold
        from pinbench.series.thresholds import default_direction, set_threshold

        principal.require("publish")
        key, members = resolve(ws, name.lstrip("/"))
        principal.require_namespace(key.model, "set thresholds of")
        assert principal.user is not None  # a token with the publish scope has a user
        fields = {f: getattr(data, f) for f in ThresholdRequest.__struct_fields__}
        fields["direction"] = data.direction or default_direction(data.metric)
        stored, added = set_threshold(ws, key, members, Threshold(**fields), by=principal.user)
        return {**stored.to_json(), "added": added}


class GateController(Controller):
    path = "/api/v1/gate"
    tags = ["series"]  # noqa: RUF012

    @post(
        "/",
        sync_to_thread=True,
        status_code=200,
        summary="Judge a recorded run against its series under the thresholds",
        description="Needs the `run` scope. A regression is recorded as an alert. The answer's "
        "`outcome` is passed, regressed or inconclusive (`exit_code` 0, 1, 2).",
        operation_id="gate",
    )
    def gate(self, ws: Workspace, principal: Principal, data: GateRequest) -> dict[str, Any]:
        from pinbench.series.gate import gate

        principal.require("run")
        return gate(ws, data.run, series=data.series).to_json()


class AlertController(Controller):
    path = "/api/v1/alerts"
    tags = ["series"]  # noqa: RUF012

    @get("/", sync_to_thread=True, summary="Alerts, newest first", operation_id="listAlerts")
    def list_alerts(
        self,
        ws: Workspace,
        principal: Principal,
        series: Annotated[str | None, Parameter(max_length=600)] = None,
        alert_state: Annotated[
            str | None, Parameter(query="state", description="open or acknowledged")
        ] = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        from pinbench.series.alerts import list_alerts

        principal.require("read")
        return list_alerts(ws, series=series, state=alert_state, limit=limit)

    @post(
        "/{alert_id:int}/acknowledge",
        sync_to_thread=True,
        status_code=200,
        summary="Acknowledge an alert (never deleted)",
        description="Needs the `publish` scope and membership of the model's namespace.",
        operation_id="acknowledgeAlert",
    )
    def acknowledge(self, ws: Workspace, principal: Principal, alert_id: int) -> dict[str, Any]:
        from pinbench.series.alerts import acknowledge, alert_of
        from pinbench.series.names import SeriesKey

        principal.require("publish")
        key = SeriesKey.parse(alert_of(ws, alert_id)["series"])
        principal.require_namespace(key.model, "acknowledge alerts of")
        assert principal.user is not None
        return acknowledge(ws, alert_id, by=principal.user)
