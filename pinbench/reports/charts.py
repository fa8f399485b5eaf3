"""The report's plots as Vega-Lite specifications (plain JSON, data inlined).

Data is reduced in Python before it goes in (at most ``CDF_POINTS`` quantiles per run, fixed
histogram bins), so a report over long runs stays small and every plot draws the same way in
any browser. Each plot says why it is absent when the runs cannot make it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinbench.reports.data import Report, RunData

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
"""An identifier Vega-Embed reads to pick the grammar; nothing is fetched from it."""
CDF_POINTS = 200
HISTOGRAM_BINS = 40
WIDTH = 560
HEIGHT = 280
LEGEND = {"labelLimit": 360, "orient": "bottom", "direction": "vertical"}


@dataclass(frozen=True, slots=True)
class Chart:
    key: str
    title: str
    spec: dict[str, Any] | None
    reason: str | None = None
    """Why there is no plot (``spec`` is None)."""
    caption: str | None = None
    """What a drawn plot's readers must know beside it (e.g. which runs set a roof)."""


def to_ms(ns: float) -> float:
    """Milliseconds, to the nanosecond."""
    return round(ns / 1e6, 6)


def chart_spec(title: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A Vega-Lite spec of the report's size over ``rows``, its marks left to the caller."""
    return {
        "$schema": SCHEMA,
        "title": title,
        "width": WIDTH,
        "height": HEIGHT,
        "data": {"values": rows},
    }


def _with_latencies(report: Report) -> list[tuple[RunData, np.ndarray[Any, Any]]]:
    return [(r, r.latencies_ns) for r in report.runs if r.latencies_ns is not None]


def latency_cdf(report: Report) -> Chart:
    title = "Framework-call latency distribution (CDF)"
    runs = _with_latencies(report)
    if not runs:
        return Chart("cdf", title, None, "none of these runs recorded latencies")
    rows: list[dict[str, Any]] = []
    for run, lat in runs:
        q = np.linspace(0.0, 1.0, min(CDF_POINTS, lat.size))
        for fraction, value in zip(q, np.quantile(lat.astype(np.float64), q), strict=True):
            rows.append({"run": run.label, "latency_ms": to_ms(value), "fraction": float(fraction)})
    spec = chart_spec(title, rows) | {
        "mark": {"type": "line", "interpolate": "step-after"},
        "encoding": {
            "x": {
                "field": "latency_ms",
                "type": "quantitative",
                "title": "latency (ms, log scale)",
                "scale": {"type": "log"},
            },
            "y": {"field": "fraction", "type": "quantitative", "title": "fraction of queries"},
            "color": {"field": "run", "type": "nominal", "legend": LEGEND},
            "tooltip": [
                {"field": "run"},
                {"field": "latency_ms", "format": ".3f"},
                {"field": "fraction", "format": ".3f"},
            ],
        },
    }
    return Chart("cdf", title, spec)


def latency_histogram(report: Report) -> Chart:
    """Shares of each run's queries in common bins, evenly spaced on a log scale (runs here
    may differ a hundredfold), up to the highest run's 99.9th percentile (a few stragglers
    would otherwise squeeze every bar into one)."""
    title = "Framework-call latency distribution (histogram)"
    runs = _with_latencies(report)
    if not runs:
        return Chart("histogram", title, None, "none of these runs recorded latencies")
    low = max(1.0, min(float(lat.min()) for _, lat in runs))
    high = max(float(np.percentile(lat, 99.9)) for _, lat in runs)
    edges = np.geomspace(low, max(high, low * 1.01), HISTOGRAM_BINS + 1)
    rows: list[dict[str, Any]] = []
    for run, lat in runs:
        counts, _ = np.histogram(np.clip(lat, low, edges[-1]), bins=edges)
        for i, count in enumerate(counts):
            rows.append(
                {
                    "run": run.label,
                    "from_ms": to_ms(edges[i]),
                    "to_ms": to_ms(edges[i + 1]),
                    "share": float(count) / lat.size,
                }
            )
    spec = chart_spec(title, rows) | {
        "mark": {"type": "rect", "opacity": 0.55},
        "encoding": {
            "x": {
                "field": "from_ms",
                "type": "quantitative",
                "title": "latency (ms, log scale)",
                "scale": {"type": "log"},
            },
            "x2": {"field": "to_ms"},
            "y": {"field": "share", "type": "quantitative", "title": "share of queries"},
            "y2": {"datum": 0},
            "color": {"field": "run", "type": "nominal", "legend": LEGEND},
            "tooltip": [
                {"field": "run"},
                {"field": "from_ms"},
                {"field": "share", "format": ".3f"},
            ],
        },
    }
    return Chart("histogram", title, spec)


def inference_runs(report: Report) -> list[RunData]:
    """The runs of models (not operator or training runs): what the inference plots draw."""
    return [run for run in report.runs if run.level == "inference"]


def line_of(run: RunData) -> str:
    """Runs drawn as one line: traced and untraced runs never share one."""
    i = run.info
    traced = f" traced:{run.trace}" if run.trace != "none" else ""
    return f"{i['model']} {i['framework'] or ''} {i['dataset']} {i['scenario']} {i['mode']}{traced}"


def sweep(report: Report) -> Chart:
    """Latency vs throughput: runs of one model, framework, dataset and scenario at several
    batch sizes (a sweep's points, or runs made one by one), one line per group."""
    title = "Latency vs throughput across batch sizes"
    groups: dict[str, list[RunData]] = defaultdict(list)
    for run in inference_runs(report):
        m = run.metrics
        if "throughput_sps" in m and "latency_p50_ns" in m:
            groups[line_of(run)].append(run)
    rows = [
        {
            "group": key,
            "batch_size": run.info["batch_size"],
            "throughput_sps": run.metrics["throughput_sps"],
            "latency_p50_ms": to_ms(run.metrics["latency_p50_ns"]),
            "latency_p90_ms": to_ms(
                run.metrics.get("latency_p90_ns", run.metrics["latency_p50_ns"])
            ),
        }
        for key, members in sorted(groups.items())
        if len({r.info["batch_size"] for r in members}) > 1
        for run in sorted(members, key=lambda r: int(r.info["batch_size"]))
    ]
    if not rows:
        return Chart(
            "sweep",
            title,
            None,
            "no batch-size sweep here: it needs runs of one model, framework and scenario "
            "at two or more batch sizes",
        )
    spec = chart_spec(title, rows) | {
        "encoding": {
            "x": {
                "field": "throughput_sps",
                "type": "quantitative",
                "title": "throughput, LoadGen (samples/s)",
            },
            "y": {
                "field": "latency_p50_ms",
                "type": "quantitative",
                "title": "p50 latency, LoadGen (ms)",
            },
            "color": {"field": "group", "type": "nominal", "legend": LEGEND},
            "order": {"field": "batch_size", "type": "quantitative"},
        },
        "layer": [
            {"mark": {"type": "line", "point": True}},
            {
                "mark": {"type": "text", "dy": -10},
                "encoding": {"text": {"field": "batch_size", "type": "quantitative"}},
            },
        ],
    }
    return Chart("sweep", title, spec)


def accuracy_points(report: Report) -> list[dict[str, Any]]:
    """One point per (model, framework, dataset) with an accuracy (its task's headline
    metric, ``pinbench.tasks``): that accuracy and the p50 latency of its SingleStream
    performance run when the report has one (LoadGen's), else of the accuracy run itself (its
    framework call's: LoadGen times no query in accuracy mode; ``latency_from`` says which).
    Latency never comes from a traced run."""
    from pinbench.tasks.registry import headline

    by_key: dict[tuple[str, str, str], dict[str, Any]] = {}
    for run in inference_runs(report):
        i = run.info
        key = (i["model"] or "", i["framework"] or "", i["dataset"] or "")
        slot = by_key.setdefault(key, {})
        m = run.metrics
        found = headline(m)
        if found is not None:
            slot.setdefault("metric", found[1].name)
            slot.setdefault("task", found[0].title)
            slot.setdefault("accuracy", found[2])
            # an accuracy run has no LoadGen latencies: its own is the framework call's
            own = m.get("latency_p50_ns", m.get("framework_latency_p50_ns"))
            slot.setdefault("own_p50", own if run.trace == "none" else None)
            slot.setdefault(
                "own_from",
                "accuracy run" if "latency_p50_ns" in m else "accuracy run (framework call)",
            )
        if i["mode"] == "performance" and "latency_p50_ns" in m and run.trace == "none":
            rank = 0 if i["scenario"] == "SingleStream" else 1
            if rank < slot.get("rank", 2):
                slot.update(rank=rank, p50=m["latency_p50_ns"], scenario=i["scenario"])
    points = []
    for (model, framework, dataset), slot in sorted(by_key.items()):
        if "metric" not in slot:
            continue
        p50 = slot.get("p50", slot.get("own_p50"))
        if p50 is None:
            continue
        point = {
            "model": model,
            "framework": framework,
            "dataset": dataset,
            "metric": slot["metric"],
            "task": slot["task"],
            "accuracy": slot["accuracy"],
            "latency_p50_ms": to_ms(p50),
            "latency_from": slot.get("scenario", slot.get("own_from", "accuracy run")),
        }
        point[slot["metric"]] = slot["accuracy"]  # also by its own name (e.g. top1)
        points.append(point)
    return points


def accuracy_vs_latency(report: Report) -> Chart:
    title = "Accuracy vs latency across models and frameworks, per task"
    rows = accuracy_points(report)
    if not rows:
        return Chart("accuracy", title, None, "no run here measured accuracy (mode: accuracy)")
    layer = {
        "mark": {"type": "point", "filled": True, "size": 90},
        "encoding": {
            "x": {"field": "latency_p50_ms", "type": "quantitative", "title": "p50 latency (ms)"},
            "y": {
                "field": "accuracy",
                "type": "quantitative",
                "title": "accuracy (each task's headline metric)",
                "scale": {"zero": False},
            },
            "color": {"field": "framework", "type": "nominal"},
            "shape": {"field": "model", "type": "nominal"},
            "tooltip": [
                {"field": "model"},
                {"field": "framework"},
                {"field": "metric"},
                {"field": "accuracy", "format": ".4f"},
                {"field": "latency_p50_ms", "format": ".3f"},
                {"field": "latency_from"},
            ],
        },
    }
    if len({r["task"] for r in rows}) == 1:
        return Chart("accuracy", title, chart_spec(title, rows) | layer)
    base = {k: v for k, v in chart_spec(title, rows).items() if k not in ("width", "height")}
    spec = base | {
        "facet": {"row": {"field": "task", "type": "nominal", "title": None}},
        "spec": layer | {"width": WIDTH, "height": HEIGHT // 2},
        "resolve": {"scale": {"y": "independent", "x": "independent"}},
    }
    return Chart("accuracy", title, spec)
