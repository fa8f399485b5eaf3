"""The web UI's series pages: every series, and one series with a plot of each metric over
it (inline SVG, ``pinbench.series.plot``), its thresholds, what moved at each step and its
alerts."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get
from litestar.exceptions import HTTPException
from litestar.response import Template
from markupsafe import Markup

from pinbench.accounts import Principal
from pinbench.errors import PinbenchError
from pinbench.metric_names import words
from pinbench.web.answers import on_error, page
from pinbench.web.pages import provide_ui_principal
from pinbench.web.series_rows import named_alerts, named_metrics, plot_unit, series_runs
from pinbench.workspace import Workspace


def _bound(threshold: dict[str, Any], values: list[float]) -> float | None:
    """The relative threshold's limit over the window's median, to draw (None otherwise)."""
    if threshold["test"] != "relative" or not values:
        return None
    from statistics import median as median_of

    median = median_of(values[-int(threshold["window"]) :])
    change = float(threshold["max_change"])
    return median * (1 + change) if threshold["direction"] == "lower" else median * (1 - change)


class SeriesPages(Controller):
    path = "/ui/series"
    include_in_schema = False
    dependencies = {"principal": provide_ui_principal}  # noqa: RUF012
    exception_handlers = {PinbenchError: on_error, HTTPException: on_error, Exception: on_error}  # noqa: RUF012

    @get("/", sync_to_thread=True)
    def series_list(self, ws: Workspace, principal: Principal) -> Template:
        from pinbench.series.alerts import list_alerts
        from pinbench.series.members import list_series

        principal.require("read")
        return page(
            "series_list",
            principal=principal,
            series=named_metrics(list_series(ws)),
            alerts=named_alerts(list_alerts(ws, state="open", limit=50)),
        )

    @get("/{name:path}", sync_to_thread=True)
    def series(self, ws: Workspace, principal: Principal, name: str) -> Template:
        from pinbench.series.alerts import list_alerts, regressed_runs
        from pinbench.series.members import detail, resolve
        from pinbench.series.plot import series_svg
        from pinbench.series.thresholds import thresholds

        principal.require("read")
        key, members = resolve(ws, name.lstrip("/"))
        info = detail(key, members)
        current = {v.threshold.metric: v.to_json() for v in thresholds(ws, key)}
        alerts = list_alerts(ws, series=str(key), limit=200)
        points = info["points"]
        runs = series_runs(members, points, regressed_runs(ws, str(key)))
        labels = [
            f"{p['run'][:8]} {p['model']} {p['framework']}" + (" INVALID" if row.invalid else "")
            for p, row in zip(points, runs.rows, strict=True)
        ]
        task = members[0].lock.body.dataset.task if members[0].lock.body.dataset else None
        plots = []
        for metric in info["metrics"]:
            values = [p["metrics"].get(metric) for p in points]
            flagged = [
                i
                for i, p in enumerate(points)
                if any(a["run"] == p["run"] and a["metric"] == metric for a in alerts)
            ]
            known = [v for v in values if v is not None]
            unit, per = plot_unit(metric, known, info["units"].get(metric, ""))
            bound = _bound(current[metric], known) if metric in current else None
            said = words(metric, task=task)
            svg = series_svg(
                f"{said} ({unit})" if unit else said,
                [None if v is None else v / per for v in values],
                labels,
                flagged=flagged,
                bound=None if bound is None else bound / per,
            )
            plots.append(
                {
                    "metric": metric,
                    "words": said,
                    "unit": unit,
                    "svg": Markup(svg),
                    "threshold": current.get(metric),
                }
            )
        return page(
            "series",
            principal=principal,
            s=info,
            runs=runs,
            plots=plots,
            alerts=named_alerts(alerts),
        )
