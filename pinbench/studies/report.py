"""``study report NAME --html FILE``: the study's matrix and analyses as one self-contained
page (the report's plotting scripts inlined and allowed by hash, no network), its plots
Vega-Lite specifications as every pinbench report draws them."""

from __future__ import annotations

from typing import Any

from pinbench.reports.charts import WIDTH, Chart, chart_spec
from pinbench.studies import figures

LATENCY = {
    "field": "latency_p90_ms",
    "type": "quantitative",
    "title": "p90 latency (ms)",
    "scale": {"type": "log"},
}


def _point_chart(
    key: str, title: str, rows: list[dict[str, Any]], enc: dict[str, Any], reason: str
) -> Chart:
    if not rows:
        return Chart(key, title, None, reason)
    layer = {"mark": {"type": "point", "filled": True, "size": 90}, "encoding": enc}
    return Chart(key, title, chart_spec(title, rows) | layer)


BAR_STEP = 5
"""Pixels of a speed-up bar (a model's band holds one per system)."""


def _by_metric(spec: dict[str, Any]) -> dict[str, Any]:
    """One row of the plot per metric, each its own y axis (a CER is no top-1)."""
    base = {k: v for k, v in spec.items() if k not in ("width", "height", "mark", "encoding")}
    inner = {"mark": spec["mark"], "encoding": spec["encoding"], "width": WIDTH, "height": 160}
    return base | {
        "facet": {"row": {"field": "metric", "type": "nominal", "title": None}},
        "spec": inner,
        "resolve": {"scale": {"y": "independent"}},
    }


def charts(found: dict[str, Any]) -> list[Chart]:
    """The study's plots, each saying why it is absent when the study cannot make it."""
    pareto = _point_chart(
        "pareto",
        "Each task's headline metric vs p90 latency per system (squares: on the Pareto front)",
        [
            p
            | {
                "on_front": "front" if p["front"] else "behind",
                "shown_accuracy": figures.accuracy(p["accuracy"], p["metric"], p.get("task")),
                "shown_p90": figures.ms(p["latency_p90_ms"]),
            }
            for p in found["pareto"]
        ],
        {
            "x": LATENCY,
            "y": {"field": "accuracy", "type": "quantitative", "scale": {"zero": False}},
            "color": {"field": "system", "type": "nominal"},
            "shape": {
                "field": "on_front",
                "type": "nominal",
                "title": "Pareto front",
                "scale": {"domain": ["front", "behind"], "range": ["square", "circle"]},
            },
            "tooltip": [
                {"field": "model"},
                {"field": "system"},
                {"field": "shown_accuracy", "title": "accuracy"},
                {"field": "shown_p90", "title": "p90 (ms)"},
            ],
        },
        "no model has both an accuracy cell and a VALID SingleStream cell on one system",
    )
    if pareto.spec is not None and len({p["metric"] for p in found["pareto"]}) > 1:
        pareto = Chart(pareto.key, pareto.title, _by_metric(pareto.spec))
    speed = Chart(
        "speedups", "Speed-up over the family's slowest", None, "no VALID SingleStream cell"
    )
    if found["speedups"]:
        title = speed.title
        speed = Chart(
            "speedups",
            title,
            chart_spec(
                title,
                [
                    r
                    | {
                        "shown_speedup": figures.times(r["speedup"]),
                        "shown_p90": figures.ms(r["latency_p90_ms"]),
                    }
                    for r in found["speedups"]
                ],
            )
            | {
                # a bar per model and system, whatever the number of models
                "height": {"step": BAR_STEP},
                "mark": "bar",
                "encoding": {
                    "y": {"field": "model", "type": "nominal"},
                    "x": {"field": "speedup", "type": "quantitative", "title": "speed-up (x)"},
                    "color": {"field": "system", "type": "nominal"},
                    "yOffset": {"field": "system"},
                    "tooltip": [
                        {"field": "framework"},
                        {"field": "system"},
                        {"field": "shown_speedup", "title": "speed-up"},
                        {"field": "shown_p90", "title": "p90 (ms)"},
                    ],
                },
            },
        )
    streams = _point_chart(
        "streams",
        "SingleStream p90 latency vs Offline throughput",
        [
            r
            | {
                "shown_p90": figures.ms(r["latency_p90_ms"]),
                "shown_throughput": figures.per_second(r["throughput_sps"]),
                "shown_gain": figures.number(r["offline_gain"]),
            }
            for r in found["streams"]["rows"]
        ],
        {
            "x": LATENCY,
            "y": {
                "field": "throughput_sps",
                "type": "quantitative",
                "title": "samples/s",
                "scale": {"type": "log"},
            },
            "color": {"field": "system", "type": "nominal"},
            "shape": {"field": "model", "type": "nominal"},
            "tooltip": [
                {"field": "label"},
                {"field": "shown_p90", "title": "p90 (ms)"},
                {"field": "shown_throughput", "title": "Offline throughput"},
                {"field": "shown_gain", "title": "Offline gain (samples in flight)"},
            ],
        },
        "no model has both a VALID SingleStream cell and a VALID Offline cell at batch 1",
    )
    sweep = Chart(
        "batches",
        "Offline throughput per batch size",
        None,
        "no model sweeps batch sizes (batch_sizes: in the study file)",
    )
    if found["batches"]:
        title = sweep.title
        sweep = Chart(
            "batches",
            title,
            chart_spec(
                title,
                [
                    r | {"shown_throughput": figures.per_second(r["throughput_sps"])}
                    for r in found["batches"]
                ],
            )
            | {
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": {"field": "batch_size", "type": "quantitative", "scale": {"type": "log"}},
                    "y": {"field": "throughput_sps", "type": "quantitative", "title": "samples/s"},
                    "color": {"field": "model", "type": "nominal"},
                    "strokeDash": {"field": "system", "type": "nominal"},
                    "tooltip": [
                        {"field": "model"},
                        {"field": "system"},
                        {"field": "batch_size", "title": "batch size"},
                        {"field": "shown_throughput", "title": "Offline throughput"},
                    ],
                },
            },
        )
    return [pareto, speed, streams, sweep]


def study_html(matrix: dict[str, Any]) -> str:
    import pinbench
    from pinbench.reports.render import _inline_css, _inline_scripts, policy, templates
    from pinbench.studies.analyses import analyse

    found = analyse(matrix)
    page = templates().get_template("report/study.html.j2")
    return page.render(
        study=matrix,
        found=found,
        charts=charts(found),
        version=pinbench.__version__,
        scripts=_inline_scripts(),
        css=_inline_css(),
        policy=policy(),
    )
