"""The analyses MLModelScope's case studies draw, computed from a study's matrix
(``matrix.study_matrix``) and nothing else:

- ``pareto``: per system, dataset (the version the runs used) and metric, each model's accuracy
  (its accuracy-mode cell, the task's headline metric) against its SingleStream p90 latency;
  the front is every model no other beats on both (a better metric, by the metric's own
  direction, and a lower latency, one of them strictly);
- ``speedups``: per family and system, each model's (its framework's) SingleStream p90
  latency and its speed-up over the family's slowest on that system;
- ``systems``: per model, its p90 on each system over its p90 on the study's first system;
- ``streams``: per model and system, SingleStream p90 latency against Offline throughput
  (batch 1), and the Offline gain: throughput x p50 latency (how many samples Offline keeps
  in flight where SingleStream has one);
- ``batches``: Offline throughput per batch size where a model sweeps them.

Only succeeded cells count, none whose run was UNSANDBOXED (its code could read its clock and
the truth: issue 84, item 5), of performance cells only those LoadGen called VALID whose p50,
p90 and throughput are positive: the others are listed as left out, with the reason.
Outliers are Tukey's (outside 1.5 times the interquartile range beyond the quartiles, NumPy's
linear quantiles) among at least ``MIN_FOR_OUTLIERS`` values: the system ratios per system,
and the Offline gains.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

MIN_FOR_OUTLIERS = 4
TUKEY_K = 1.5


def tukey(values: dict[str, float]) -> dict[str, Any]:
    """Which of ``values`` (by label) lie outside Tukey's fences; with the fences, or why
    none were computed."""
    import numpy as np

    if len(values) < MIN_FOR_OUTLIERS:
        reason = f"{len(values)} values: the fences need {MIN_FOR_OUTLIERS}"
        return {"outliers": [], "fences": None, "reason": reason}
    q1, q3 = (float(q) for q in np.quantile(np.array(list(values.values())), [0.25, 0.75]))
    low, high = q1 - TUKEY_K * (q3 - q1), q3 + TUKEY_K * (q3 - q1)
    out = sorted(k for k, v in values.items() if v < low or v > high)
    return {"outliers": out, "fences": [low, high], "reason": None}


PERFORMANCE = ("latency_p50_ns", "latency_p90_ns", "throughput_sps")


def _usable(cells: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    keep, left = [], []
    for c in cells:
        if c.get("status") != "succeeded":
            continue
        if c.get("unsandboxed_bool") == 1.0:  # its code could read the truth and the clock
            reason = "its run was UNSANDBOXED: its figures are its own word"
            left.append({"key": c["key"], "reason": reason})
            continue
        if c["mode"] == "performance":
            if c.get("loadgen_valid_bool") != 1.0:
                left.append({"key": c["key"], "reason": "LoadGen called the run INVALID"})
                continue
            lacking = [k for k in PERFORMANCE if not (c.get(k) or 0) > 0]
            if lacking:
                reason = f"its run recorded no positive {', '.join(lacking)}"
                left.append({"key": c["key"], "reason": reason})
                continue
        keep.append(c)
    return keep, left


def _performance(c: dict[str, Any], scenario: str) -> bool:
    return bool(c["scenario_name"] == scenario and c["mode"] == "performance")


def _entry(c: dict[str, Any]) -> str:
    return f"{c['model']} {c['framework']}"


def _single(cells: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each (model entry, system)'s first SingleStream performance cell."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cells:
        if _performance(c, "SingleStream"):
            out.setdefault((_entry(c), c["system"]), c)
    return out


def _higher_is_better(metric: str, task: str | None) -> bool:
    from pinbench.tasks.registry import metric_of

    found = metric_of(metric, task)
    return True if found is None else bool(found.higher_is_better)


def _beats(q: dict[str, Any], p: dict[str, Any]) -> bool:
    """``q`` is at least as good as ``p`` on both axes and better on one."""
    sign = 1.0 if q["higher_is_better"] else -1.0
    a, b = sign * float(q["accuracy"]), sign * float(p["accuracy"])
    ql, pl = float(q["latency_p90_ms"]), float(p["latency_p90_ms"])
    return a >= b and ql <= pl and (a > b or ql < pl)


def pareto(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    single = _single(cells)
    points = []
    for c in cells:
        s = single.get((_entry(c), c["system"]))
        if c["mode"] == "accuracy" and "accuracy" in c and s is not None:
            points.append(
                {
                    "model": _entry(c),
                    "system": c["system"],
                    "dataset": c.get("dataset_resolved") or c["dataset"],
                    "metric": c["accuracy_metric"],
                    "accuracy": c["accuracy"],
                    "task": c.get("task"),
                    "higher_is_better": _higher_is_better(c["accuracy_metric"], c.get("task")),
                    "latency_p90_ms": s["latency_p90_ns"] / 1e6,
                    "run": s["run"],
                    "accuracy_run": c["run"],
                }
            )
    group = ("system", "dataset", "metric")
    for p in points:
        rivals = [q for q in points if all(q[k] == p[k] for k in group)]
        p["front"] = not any(_beats(q, p) for q in rivals)
    return points


def speedups(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_family: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for (_, system), c in _single(cells).items():
        by_family[(c["family"], system)].append(c)
    rows = []
    for (family, _), members in sorted(by_family.items()):
        slowest = max(c["latency_p90_ns"] for c in members)
        for c in members:
            rows.append(
                {
                    "family": family,
                    "model": c["model"],
                    "framework": c["framework_resolved"],
                    "system": c["system"],
                    "latency_p90_ms": c["latency_p90_ns"] / 1e6,
                    "speedup": slowest / c["latency_p90_ns"],
                    "run": c["run"],
                }
            )
    return rows


def systems(cells: list[dict[str, Any]], order: list[str]) -> dict[str, Any]:
    single = _single(cells)
    rows: list[dict[str, Any]] = []
    by_system: dict[str, dict[str, float]] = defaultdict(dict)
    for entry in sorted({e for e, _ in single}):
        base = next((single[(entry, s)] for s in order if (entry, s) in single), None)
        if base is None:
            continue
        for s in order:
            c = single.get((entry, s))
            if c is None or s == base["system"]:
                continue
            ratio = c["latency_p90_ns"] / base["latency_p90_ns"]
            rows.append({"model": entry, "system": s, "against": base["system"], "ratio": ratio})
            by_system[s][entry] = ratio
    flags = {s: tukey(v) for s, v in by_system.items()}
    return {"rows": rows, "outliers": flags}


def streams(cells: list[dict[str, Any]]) -> dict[str, Any]:
    single = _single(cells)
    rows, gains = [], {}
    for c in cells:
        if not _performance(c, "Offline") or c["batch_size"] != 1:
            continue
        s = single.get((_entry(c), c["system"]))
        if s is None:
            continue
        gain = c["throughput_sps"] * s["latency_p50_ns"] / 1e9
        label = f"{_entry(c)} on {c['system']}"
        gains[label] = gain
        rows.append(
            {
                "model": _entry(c),
                "system": c["system"],
                "latency_p90_ms": s["latency_p90_ns"] / 1e6,
                "throughput_sps": c["throughput_sps"],
                "offline_gain": gain,
                "label": label,
            }
        )
    return {"rows": rows, "outliers": tukey(gains)}


def batches(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    sizes: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        if _performance(c, "Offline"):
            sizes[(_entry(c), c["system"])].append(c)
    return [
        {
            "model": m,
            "system": s,
            "batch_size": c["batch_size"],
            "throughput_sps": c["throughput_sps"],
        }
        for (m, s), found in sorted(sizes.items())
        if len(found) > 1
        for c in sorted(found, key=lambda c: c["batch_size"])
    ]


def across_systems(matrix: dict[str, Any]) -> dict[str, Any]:
    """``systems`` of the study's matrix alone (what ``study show`` states beside its
    tables): each model's p90 ratios, with each system's outliers."""
    cells, _ = _usable(matrix["cells"])
    return systems(cells, [s["name"] for s in matrix["systems"]])


def analyse(matrix: dict[str, Any]) -> dict[str, Any]:
    """Every analysis of the study's matrix, with the cells left out and why."""
    cells, left = _usable(matrix["cells"])
    order = [s["name"] for s in matrix["systems"]]
    return {
        "pareto": pareto(cells),
        "speedups": speedups(cells),
        "systems": systems(cells, order),
        "streams": streams(cells),
        "batches": batches(cells),
        "left_out": left,
    }
