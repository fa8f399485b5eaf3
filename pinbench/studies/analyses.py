"""The analyses MLModelScope's case studies draw, computed from a study's matrix
(``matrix.study_matrix``) and nothing else:

- ``pareto``: per system and dataset, each model's accuracy (its accuracy-mode cell) against
  its SingleStream p90 latency; the front is every model no other beats on both (higher
  accuracy and lower latency, one of them strictly);
- ``speedups``: per family, each (model, framework, system)'s SingleStream p90 latency and its
  speed-up over the family's slowest;
- ``systems``: per model, its p90 on each system over its p90 on the study's first system;
- ``streams``: per model and system, SingleStream p90 latency against Offline throughput
  (batch 1), and the Offline gain: throughput x p50 latency (how many samples Offline keeps
  in flight where SingleStream has one);
- ``batches``: Offline throughput per batch size where a model sweeps them.

Only succeeded cells count, and of performance cells only those LoadGen called VALID: the
others are listed as left out, with the reason. Outliers are Tukey's (outside 1.5 times the
interquartile range beyond the quartiles, NumPy's linear quantiles) among at least
``MIN_FOR_OUTLIERS`` values: the system ratios per system, and the Offline gains.
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


def _usable(cells: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    keep, left = [], []
    for c in cells:
        if c.get("status") != "succeeded":
            continue
        if c["mode"] == "performance" and c.get("loadgen_valid_bool") != 1.0:
            left.append({"key": c["key"], "reason": "LoadGen called the run INVALID"})
            continue
        keep.append(c)
    return keep, left


def _entry(c: dict[str, Any]) -> str:
    return f"{c['model']} {c['framework']}"


def _single(cells: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each (model entry, system)'s first SingleStream performance cell."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cells:
        if c["scenario_name"] == "SingleStream" and c["mode"] == "performance":
            out.setdefault((_entry(c), c["system"]), c)
    return out


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
                    "dataset": c["dataset"],
                    "metric": c["accuracy_metric"],
                    "accuracy": c["accuracy"],
                    "latency_p90_ms": s["latency_p90_ns"] / 1e6,
                    "run": s["run"],
                    "accuracy_run": c["run"],
                }
            )
    for p in points:
        rivals = [q for q in points if (q["system"], q["dataset"]) == (p["system"], p["dataset"])]
        p["front"] = not any(
            q["accuracy"] >= p["accuracy"]
            and q["latency_p90_ms"] <= p["latency_p90_ms"]
            and (q["accuracy"] > p["accuracy"] or q["latency_p90_ms"] < p["latency_p90_ms"])
            for q in rivals
        )
    return points


def speedups(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (_, _), c in _single(cells).items():
        by_family[c["family"]].append(c)
    rows = []
    for family, members in sorted(by_family.items()):
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
        if c["scenario_name"] != "Offline" or c["batch_size"] != 1 or "throughput_sps" not in c:
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
        if c["scenario_name"] == "Offline" and "throughput_sps" in c:
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
