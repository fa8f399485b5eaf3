"""The gate's statistics in simulation: false alarms, detection, change points (issue 51).

Threshold tests. Each trial simulates a window of ``WINDOW`` past runs and one candidate run
as raw per-query latencies, the way ``bench_verdict`` does: each run's true median is the
scenario's times ``exp(N(0, sigma))`` (log-normal run-to-run noise, drawn afresh for every
run), and the run holds ``SAMPLES`` log-normal latencies around it (log spread ``WITHIN``);
its summary figure is its median. The candidate's true median is moved by the scenario's
shift (0: the same model; +5%: a regression). The real ``pinbench.series.stats.compare``
gives the verdict; counted are regressed (a false alarm when the shift is 0, a detection
when it is +5%), inconclusive, and how often the pooled per-query test alone was significant
(the rule decision 255 rejects). Thresholds: ``t`` and ``mann-whitney`` on the latencies,
``t`` on the per-run figures only (no raw), at alpha 0.01 unless named.

Several candidate runs (``gate --repeat K``, decision 264). The same trials with ``K`` runs of
the candidate (K = 1, 3, 5), each drawn like one run (its own run-to-run noise), judged
together: the pooled test on their latencies, the run-level test on their K figures against
the window's 10. ``t`` and ``mann-whitney`` on the latencies, alpha 0.01.

Change points. Each trial is a series of ``SERIES`` runs' figures (log-normal noise sigma)
with a shift injected at a random position (found: a change point within one run of it),
nothing (any change point is a false one), a single outlier three times the median (any
change point is a false one), or a drift of +1% a run over ten runs (found: a change point
inside the drift, one run either side).

``--runs`` is the number of trial sets (default 5); each set of a scenario has a fixed seed
(the scenario's seed, the set's index), so the figures are the same on every run. ``--part``
runs one table only (``gates``, ``repeat``, ``points``; default all three).

Run: ``.venv/bin/python -m bench.bench_gate_simulation --runs 5`` (``--json``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bench._common import check_runs, command_line, load_average, log, machine, parser, table
from pinbench.series.changepoints import change_points
from pinbench.series.stats import Observation, Threshold, compare

SAMPLES = 1_000
"""Latencies per simulated run."""
WITHIN = 0.2
"""Log spread of the latencies inside one run."""
WINDOW = 10
SERIES = 30
MEDIAN_NS = 1e6


@dataclass(frozen=True, slots=True)
class Gate:
    name: str
    threshold: Threshold
    raw: bool
    sigma: float
    shift: float
    seed: int
    trials_per_set: int = 100
    repeat: int = 1
    """Candidate runs judged together."""


@dataclass(frozen=True, slots=True)
class Points:
    name: str
    kind: str  # shift, noise, outlier, drift
    sigma: float
    shift: float
    seed: int
    trials_per_set: int = 10


T = Threshold("framework_latency_p50_ns", "t", "lower")
MW = Threshold("framework_latency_p50_ns", "mann-whitney", "lower")
GATES = [
    Gate(f"{name}, sigma {sigma}, shift {shift:+.0%}", th, raw, sigma, shift, seed)
    for seed, (name, th, raw) in enumerate(
        [
            ("t, raw", T, True),
            ("mann-whitney, raw", MW, True),
            ("t, per-run figures", T, False),
            ("t, raw, max_change 3%", replace(T, max_change=0.03), True),
        ]
    )
    for sigma in (0.01, 0.02, 0.05)
    for shift in (0.0, 0.05)
]
REPEATS = [
    Gate(
        f"{name}, K={k}, sigma {sigma}, shift {shift:+.0%}", th, True, sigma, shift, seed, repeat=k
    )
    for seed, (name, th) in enumerate([("t, raw", T), ("mann-whitney, raw", MW)], start=20)
    for k in (1, 3, 5)
    for sigma in (0.01, 0.02, 0.05)
    for shift in (0.0, 0.05)
]
POINTS = [
    Points("shift +10%, sigma 0.02", "shift", 0.02, 0.10, 101),
    Points("shift +5%, sigma 0.01", "shift", 0.01, 0.05, 102),
    Points("shift +5%, sigma 0.02", "shift", 0.02, 0.05, 103),
    Points("noise only, sigma 0.02", "noise", 0.02, 0.0, 104),
    Points("one outlier x3, sigma 0.02", "outlier", 0.02, 2.0, 105),
    Points("drift +1%/run over 10, sigma 0.01", "drift", 0.01, 0.01, 106),
]


def _run(rng: np.random.Generator, scale: float, sigma: float, raw: bool) -> Observation:
    latencies = rng.lognormal(math.log(MEDIAN_NS * scale) + rng.normal(0.0, sigma), WITHIN, SAMPLES)
    figure = float(np.median(latencies))
    return Observation(figure, latencies.tolist() if raw else None)


def gate_set(g: Gate, index: int) -> dict[str, int]:
    key = [g.seed, int(g.sigma * 1000), int(g.shift * 100), index]
    rng = np.random.default_rng(key + ([g.repeat] if g.repeat != 1 else []))
    counts = {"trials": 0, "regressed": 0, "inconclusive": 0, "pooled_significant": 0}
    for _ in range(g.trials_per_set):
        history = [_run(rng, 1.0, g.sigma, g.raw) for _ in range(WINDOW)]
        cands = [_run(rng, 1.0 + g.shift, g.sigma, g.raw) for _ in range(g.repeat)]
        result = compare(g.threshold, history, cands)
        counts["trials"] += 1
        counts[result.verdict] = counts.get(result.verdict, 0) + 1
        p = result.p_value
        counts["pooled_significant"] += g.raw and p is not None and p < g.threshold.alpha
    return counts


def points_set(s: Points, index: int) -> dict[str, int]:
    rng = np.random.default_rng([s.seed, index])
    counts = {"trials": 0, "hit": 0, "false": 0}
    for _ in range(s.trials_per_set):
        x = MEDIAN_NS * rng.lognormal(0.0, s.sigma, SERIES)
        at = int(rng.integers(6, SERIES - 6))
        wanted = range(0)  # where a change point is right: nowhere for noise and outliers
        if s.kind == "shift":
            x[at:] *= 1.0 + s.shift
            wanted = range(at - 1, at + 2)
        elif s.kind == "outlier":
            x[at] *= 1.0 + s.shift
        elif s.kind == "drift":
            at = min(at, SERIES - 11)
            x[at : at + 10] *= 1.0 + s.shift * np.arange(1, 11)
            x[at + 10 :] *= 1.0 + 10 * s.shift
            wanted = range(at - 1, at + 12)
        found = [p.index for p in change_points(x)]
        counts["trials"] += 1
        counts["hit"] += any(i in wanted for i in found)
        counts["false"] += any(i not in wanted for i in found)
    return counts


def _pool(sets: list[dict[str, int]]) -> dict[str, int]:
    return {k: sum(s.get(k, 0) for s in sets) for k in sets[0]}


def _margin(p: float, n: int) -> float:
    return 3.0 * math.sqrt(p * (1.0 - p) / n)


def measure_gate(g: Gate, sets: int) -> dict[str, Any]:
    per = [gate_set(g, i) for i in range(sets)]
    total = _pool(per)
    n = total["trials"]
    alpha = g.threshold.alpha
    share = total["regressed"] / n
    return {
        "scenario": g.name,
        "test": g.threshold.test,
        "repeat": g.repeat,
        "sigma": g.sigma,
        "shift": g.shift,
        "trials": n,
        "regressed": share,
        "inconclusive": total["inconclusive"] / n,
        "pooled_significant": total["pooled_significant"] / n if g.raw else None,
        "set_min": min(s["regressed"] / s["trials"] for s in per),
        "set_max": max(s["regressed"] / s["trials"] for s in per),
        "measure": "false alarms" if g.shift == 0 else "detected",
        "target": f"<= {alpha + _margin(alpha, n):.4f}" if g.shift == 0 else "reported",
        "met": share <= alpha + _margin(alpha, n) if g.shift == 0 else None,
    }


def measure_points(s: Points, sets: int) -> dict[str, Any]:
    total = _pool([points_set(s, i) for i in range(sets)])
    n = total["trials"]
    return {
        "scenario": s.name,
        "trials": n,
        "found": total["hit"] / n if s.kind in {"shift", "drift"} else None,
        "false": total["false"] / n,
    }


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"== {report['title']}",
        f"command: {report['command']}",
        f"machine: {m['nproc']} cores, {m['memory_gib']} GiB RAM, {m['cpu_model']}",
        f"load average (1/5/15 min): {m['load_at_start']} at start, {m['load_at_end']} at end",
        "",
    ]
    rows = [
        [
            r["scenario"],
            str(r["trials"]),
            f"{r['measure']} {r['regressed']:.4f}",
            f"{r['set_min']:.3f}-{r['set_max']:.3f}",
            f"{r['inconclusive']:.4f}",
            "-" if r["pooled_significant"] is None else f"{r['pooled_significant']:.4f}",
            r["target"],
            "-" if r["met"] is None else ("yes" if r["met"] else "NO"),
        ]
        for r in report["gates"]
    ]
    heads = ["gate", "trials", "regressed", "sets", "inconclusive", "pooled p<alpha"]
    if rows:
        lines += table([*heads, "target", "met"], rows)
        lines.append("")
    lines += _render_repeats(report["repeats"])
    rows = [
        [
            r["scenario"],
            str(r["trials"]),
            "-" if r["found"] is None else f"{r['found']:.3f}",
            f"{r['false']:.3f}",
        ]
        for r in report["points"]
    ]
    if rows:
        lines += table(["change points", "series", "found (+-1 run)", "any false one"], rows)
        lines.append("")
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def _render_repeats(results: list[dict[str, Any]]) -> list[str]:
    """One row per test, K and sigma: false alarms at +0%, detection and inconclusive at +5%."""
    if not results:
        return []
    by = {(r["test"], r["repeat"], r["sigma"], r["shift"]): r for r in results}
    rows = []
    for test, k, sigma, shift in by:
        if shift != 0.0 or (test, k, sigma, 0.05) not in by:
            continue
        null, moved = by[(test, k, sigma, 0.0)], by[(test, k, sigma, 0.05)]
        rows.append(
            [
                test,
                str(k),
                f"{sigma:g}",
                str(null["trials"]),
                f"{null['regressed']:.4f}",
                "yes" if null["met"] else "NO",
                f"{moved['regressed']:.3f}",
                f"{moved['inconclusive']:.3f}",
            ]
        )
    heads = ["candidate runs: test", "K", "sigma", "trials", "false alarms", "met"]
    return [*table([*heads, "detected +5%", "inconclusive +5%"], rows), ""]


def main(argv: list[str] | None = None) -> int:
    p = parser(
        __doc__ or "",
        runs_help="trial sets, each of fixed seeds; their trials are pooled into each row's "
        "counts (not medianed)",
    )
    p.add_argument("--part", choices=["all", "gates", "repeat", "points"], default="all")
    args = p.parse_args(argv)
    sets = check_runs(args)
    report: dict[str, Any] = {
        "title": "The gate's statistics in simulation: compare and change_points",
        "command": command_line("bench.bench_gate_simulation", argv),
        "runs": sets,
        "machine": machine(args.tmp),
        "gates": [],
        "repeats": [],
        "points": [],
        "notes": [
            f"gate trials: {WINDOW} past runs and a candidate, {SAMPLES:,} log-normal latencies "
            f"a run (log spread {WITHIN}), run medians log-normal (sigma run to run); alpha 0.01",
            "target for false alarms: alpha + 3 binomial standard errors",
            "candidate runs: K runs of the candidate, each with its own run-to-run noise, judged "
            "together (the pooled test on their latencies, the run-level test on their K figures)",
            f"change-point trials: {SERIES} runs, significance 0.01, min_size 2",
        ],
    }
    wanted = {args.part} if args.part != "all" else {"gates", "repeat", "points"}
    for part, key, gates in (("gates", "gates", GATES), ("repeat", "repeats", REPEATS)):
        for g in gates if part in wanted else []:
            start = time.perf_counter()
            report[key].append(measure_gate(g, sets))
            log(f"{g.name}: {time.perf_counter() - start:.1f} s")
    for s in POINTS if "points" in wanted else []:
        start = time.perf_counter()
        report["points"].append(measure_points(s, sets))
        log(f"{s.name}: {time.perf_counter() - start:.1f} s")
    report["machine"]["load_at_end"] = load_average()
    out = json.dumps(report, indent=2) + "\n" if args.json else render(report)
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
