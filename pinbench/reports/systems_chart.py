"""The report's plot of one model across systems: LoadGen's latency percentiles and
throughput of each group of runs (one model, framework, dataset, scenario, mode and batch
size) on every system that ran it (``charts.charts`` adds it when a report's runs span
systems)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from pinbench.reports.charts import HEIGHT, WIDTH, Chart, chart_spec, inference_runs, line_of, to_ms
from pinbench.reports.data import Report, RunData
from pinbench.run_figures import loadgen_invalid

SYSTEM_LATENCIES = ("p50", "p90", "p99")
"""The latency percentiles drawn per system, each where the runs recorded it."""


def spans_systems(report: Report) -> bool:
    return len({run.system for run in report.runs}) > 1


def system_points(report: Report) -> list[dict[str, Any]]:
    """One point per (what ran, system) for each group of runs (one model, framework,
    dataset, scenario, mode and batch size; traced runs apart) that ran on two or more
    systems: LoadGen's latency percentiles (ms) and throughput. A system with several runs of
    the group gets the median of each figure, ``runs`` saying how many; runs LoadGen called
    INVALID are left out of it where the system has a valid one (``invalid`` counts them), else
    its figures are theirs (``invalid`` equals ``runs``)."""
    groups: dict[str, dict[str, list[RunData]]] = defaultdict(lambda: defaultdict(list))
    for run in inference_runs(report):
        m = run.metrics
        if "latency_p50_ns" in m or "throughput_sps" in m:
            groups[f"{line_of(run)} b{run.info['batch_size']}"][run.system].append(run)
    points = []
    for group, systems in groups.items():
        if len(systems) < 2:
            continue
        for system, every in systems.items():
            valid = [r for r in every if not loadgen_invalid(r.metrics)]
            members = valid or every  # LoadGen's INVALID runs only where a system has no other
            point: dict[str, Any] = {"group": group, "system": system, "runs": len(members)}
            point["invalid"] = len(every) - len(valid)
            for p in SYSTEM_LATENCIES:
                if all(f"latency_{p}_ns" in r.metrics for r in members):
                    values = [r.metrics[f"latency_{p}_ns"] for r in members]
                    point[f"latency_{p}_ms"] = to_ms(float(np.median(values)))
            if all("throughput_sps" in r.metrics for r in members):
                values = [r.metrics["throughput_sps"] for r in members]
                point["throughput_sps"] = float(np.median(values))
            points.append(point)
    return points


THROUGHPUT = {"field": "measure", "equal": "throughput"}


def _system_panels(group: str) -> dict[str, Any]:
    """One group's latency bars (a bar per percentile) beside its throughput bars."""
    mine = {"filter": {"field": "group", "equal": group}}
    system = {"field": "system", "type": "nominal", "title": "system", "sort": None}
    latency = {
        "width": WIDTH // 2,
        "height": HEIGHT,
        "transform": [mine, {"filter": {"not": THROUGHPUT}}],
        "mark": "bar",
        "encoding": {
            "x": system,
            "xOffset": {"field": "measure", "sort": list(SYSTEM_LATENCIES)},
            "y": {"field": "value", "type": "quantitative", "title": "latency, LoadGen (ms)"},
            "color": {"field": "measure", "type": "nominal", "title": "percentile"},
            "tooltip": [
                {"field": "system"},
                {"field": "measure"},
                {"field": "value"},
                {"field": "runs"},
            ],
        },
    }
    throughput = {
        "width": WIDTH // 3,
        "height": HEIGHT,
        "transform": [mine, {"filter": THROUGHPUT}],
        "mark": {"type": "bar", "color": "#6f42c1"},
        "encoding": {
            "x": system,
            "y": {
                "field": "value",
                "type": "quantitative",
                "title": "throughput, LoadGen (samples/s)",
            },
            "tooltip": [{"field": "system"}, {"field": "value"}, {"field": "runs"}],
        },
    }
    return {"title": group, "hconcat": [latency, throughput]}


def across_systems(report: Report) -> Chart:
    """One model's latency (p50, p90, p99 as recorded) and throughput, x = system: the
    figure a cross-system comparison leads with (MLModelScope's). One row of panels per group
    of runs (``system_points``)."""
    title = "One model across systems: latency and throughput"
    points = system_points(report)
    if not points:
        return Chart(
            "systems",
            title,
            None,
            "no model here ran on two or more systems with the same framework, dataset, "
            "scenario and batch size",
        )
    rows = [
        {"group": p["group"], "system": p["system"], "runs": p["runs"], "measure": m, "value": v}
        for p in points
        for m, v in (
            *((q, p.get(f"latency_{q}_ms")) for q in SYSTEM_LATENCIES),
            ("throughput", p.get("throughput_sps")),
        )
        if v is not None
    ]
    groups = list(dict.fromkeys(p["group"] for p in points))
    spec = {k: v for k, v in chart_spec(title, rows).items() if k not in ("width", "height")}
    spec["vconcat"] = [_system_panels(g) for g in groups]
    return Chart("systems", title, spec)
