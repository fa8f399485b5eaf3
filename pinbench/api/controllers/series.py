"""Series, their thresholds, the gate and alerts (``Registry.series()``; decisions 250-253).

Reading needs the ``read`` scope. Setting a threshold and acknowledging an alert follow how the
registry grants publishing: the ``publish`` scope and membership of the model's namespace (an
admin's ``admin`` scope for a name without one). Gating a recorded run needs the ``run``
scope; its regressions are recorded as alerts when the runs are the newest of their series, or
when the caller has publishing rights in the model's namespace (otherwise the gate answers
without recording: re-gating old runs must not let anyone who may run fill a team's alerts).
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, delete, get, post
from litestar.params import Parameter

from pinbench.accounts import AuthError, Forbidden, Principal
from pinbench.api.paging import DEFAULT_LIMIT, MAX_LIMIT, After, Limit, described, page_listed
from pinbench.api.schemas import Body
from pinbench.sdk.registry import Registry
from pinbench.sdk.series import check_candidates
from pinbench.sdk.values import SeriesKey


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
    run: str | None = None
    """A recorded run's id (or unique prefix): the candidate."""
    runs: list[str] | None = None
    """Instead of ``run``: several recorded runs of one lockfile and series, judged together
    (1 to 20)."""
    series: str | None = None
    """The series to judge against; refused when the runs are not in it. Default: theirs."""
    include_invalid: bool = False
    """Runs LoadGen called INVALID in the window too (by default they are left out)."""
    include_unsandboxed: bool = False
    """Runs that ran UNSANDBOXED in the window too (by default they are left out)."""

    def __post_init__(self) -> None:
        if (self.run is None) == (self.runs is None):
            raise ValueError("give the candidate: `run` (one id) or `runs` (a list), not both")
        if self.runs is not None:
            check_candidates(len(self.runs), "runs (its length)", user=False)

    @property
    def candidates(self) -> list[str]:
        return [self.run] if self.run is not None else list(self.runs or [])


class SeriesController(Controller):
    path = "/api/v1/series"
    tags = ["series"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="Series, by name",
        description=described("series", "name"),
        operation_id="listSeries",
    )
    def list_series(
        self,
        registry: Registry,
        principal: Principal,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[dict[str, Any]]:
        principal.require("read")
        every = registry.series().list()
        return page_listed(every, id_of=lambda s: str(s["name"]), limit=limit, after=after)

    @get(
        "/{name:path}",
        sync_to_thread=True,
        summary="One series: each run's metrics, the pins that moved, the thresholds",
        description=f"`points` holds a page of at most `limit` runs, oldest first "
        f"({DEFAULT_LIMIT} unless given, {MAX_LIMIT} at most; what moved before a run is "
        "against the run before it in the whole series). The next page: `after` = the last "
        "point's `run` (keyset paging); a page shorter than `limit` is the last. An `after` "
        "naming no run of the series is refused with 400.",
        operation_id="showSeries",
    )
    def show(
        self,
        registry: Registry,
        principal: Principal,
        name: str,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> dict[str, Any]:
        principal.require("read")
        shown = registry.series().show(name.lstrip("/"))
        points = shown["points"]
        kept = page_listed(points, id_of=lambda p: str(p["run"]), limit=limit, after=after)
        return {**shown, "points": kept}


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
        self, registry: Registry, principal: Principal, name: str, all: bool = False
    ) -> list[dict[str, Any]]:
        principal.require("read")
        return registry.series().thresholds(name.lstrip("/"), every_version=all)

    @post(
        "/{name:path}",
        sync_to_thread=True,
        status_code=200,
        summary="Set a series' threshold on a metric (a new version)",
        description="Needs the `publish` scope and membership of the model's namespace.",
        operation_id="setThreshold",
    )
    def set_threshold(
        self, registry: Registry, principal: Principal, name: str, data: ThresholdRequest
    ) -> dict[str, Any]:
        by = _publisher(registry, principal, name, "set thresholds of")
        fields = {f: getattr(data, f) for f in ThresholdRequest.__struct_fields__}
        return registry.series().set_threshold(name.lstrip("/"), by=by, **fields)

    @delete(
        "/{name:path}",
        sync_to_thread=True,
        status_code=200,
        summary="Retire a series' threshold on a metric (a new version; earlier ones are kept)",
        description="Needs the `publish` scope and membership of the model's namespace. The "
        "series no longer judges the metric; setting a threshold on it again adds the next "
        "version.",
        operation_id="retireThreshold",
    )
    def retire_threshold(
        self,
        registry: Registry,
        principal: Principal,
        name: str,
        metric: Annotated[str, Parameter(max_length=100)],
    ) -> dict[str, Any]:
        by = _publisher(registry, principal, name, "retire thresholds of")
        return registry.series().retire_threshold(name.lstrip("/"), metric, by=by)


def _publisher(registry: Registry, principal: Principal, name: str, doing: str) -> str:
    """The caller's user, when they may change the series' thresholds: the ``publish`` scope
    and membership of the model's namespace (``doing`` says what in the refusal)."""
    principal.require("publish")
    model = registry.series().show(name.lstrip("/"))["model"]
    principal.require_namespace(model, doing)
    assert principal.user is not None  # a token with the publish scope has a user
    return principal.user


class GateController(Controller):
    path = "/api/v1/gate"
    tags = ["series"]  # noqa: RUF012

    @post(
        "/",
        sync_to_thread=True,
        status_code=200,
        summary="Judge a recorded run, or several runs of one lockfile, against their series",
        description="Needs the `run` scope. `run` names one recorded run; `runs` 1 to 20 runs "
        "of one lockfile in one series, judged together. A regression is recorded as an alert "
        "when they are the newest runs of their series or the caller publishes in the "
        "model's namespace. The answer's `outcome` is passed, regressed or inconclusive "
        "(`exit_code` 0, 1, 2).",
        operation_id="gate",
    )
    def gate(self, registry: Registry, principal: Principal, data: GateRequest) -> dict[str, Any]:
        principal.require("run")

        def publishes(model: str) -> bool:
            try:
                principal.require_namespace(model, "record alerts of")
            except (Forbidden, AuthError):
                return False
            return True

        return registry.series().gate(
            data.candidates,
            series=data.series,
            alert_past=publishes,
            include_invalid=data.include_invalid,
            include_unsandboxed=data.include_unsandboxed,
        )


class AlertController(Controller):
    path = "/api/v1/alerts"
    tags = ["series"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="Alerts, newest first",
        description=described("alerts", "id")
        + f" The pages walk the newest {MAX_LIMIT} alerts (of the series and state given).",
        operation_id="listAlerts",
    )
    def list_alerts(
        self,
        registry: Registry,
        principal: Principal,
        series: Annotated[str | None, Parameter(max_length=600)] = None,
        alert_state: Annotated[
            str | None,
            Parameter(query="state", description="open or acknowledged", max_length=16),
        ] = None,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[dict[str, Any]]:
        principal.require("read")
        wanted = MAX_LIMIT if after is not None else limit  # the newest MAX_LIMIT are paged
        alerts = registry.series().alerts(series=series, state=alert_state, limit=wanted)
        return page_listed(alerts, id_of=lambda a: str(a["id"]), limit=limit, after=after)

    @get("/{alert_id:int}", sync_to_thread=True, summary="One alert", operation_id="showAlert")
    def show(self, registry: Registry, principal: Principal, alert_id: int) -> dict[str, Any]:
        principal.require("read")
        return registry.series().alert(alert_id)

    @post(
        "/{alert_id:int}/acknowledge",
        sync_to_thread=True,
        status_code=200,
        summary="Acknowledge an alert (never deleted)",
        description="Needs the `publish` scope and membership of the model's namespace.",
        operation_id="acknowledgeAlert",
    )
    def acknowledge(
        self, registry: Registry, principal: Principal, alert_id: int
    ) -> dict[str, Any]:
        principal.require("publish")
        series = registry.series()
        key = SeriesKey.parse(series.alert(alert_id)["series"])
        principal.require_namespace(key.model, "acknowledge alerts of")
        assert principal.user is not None
        return series.acknowledge(alert_id, by=principal.user)
