"""The rerun verdict in simulation: Monte Carlo trials of ``compare_latencies`` (issue 20, item 3).

Each trial simulates one original run and three reruns (five in one scenario) of a model, as
raw per-query latencies: each run's true median is the scenario's median times
``exp(N(0, sigma))`` (log-normal run-to-run noise, drawn afresh for every run), and its
latencies are ``SAMPLES`` log-normal values around that median with a log spread of
``WITHIN`` (the per-query spread inside a run, as ``tests/test_verdict.py`` simulates it).
The real ``compare_latencies`` (default band, 10%) then gives the outcome: reproduced, changed
or inconclusive. Scenarios and their targets:

* coverage: sigma = 0.1, same model; the share of originals whose median lies inside the
  reruns' 99% prediction interval, wanted 0.98-1.0;
* the demo's case: fixed rerun medians 8.5, 12 and 17.4 us, original 12.2 us (sigma = 0); every
  trial must be inconclusive;
* wide noise: sigma = 0.15, 0.3, 0.6, same model; among the trials whose reruns disagree by more
  than the band, the share called reproduced must be 0;
* tight noise: sigma = 0.01, 0.02, same model; reproduced >= 0.9 and changed <= 0.01;
* a true shift: the reruns' median 20% and 50% over the original's, sigma = 0.02; changed
  >= 0.95; and the 20% shift again with five reruns (``--repeat 5``) instead of three.

``--runs`` is the number of trial sets (default 5); each set of a scenario has its own fixed
seed (the scenario's seed, the set's index), so a run gives the same figures every time. The
fractions are pooled over all the sets' trials; the target's value in each set gives its range.

Run: ``.venv/bin/python -m bench.bench_verdict --runs 5`` (``--json``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench._common import check_runs, command_line, load_average, log, machine, parser, table
from pinbench.evaluator.verdicts.verdict import BAND, compare_latencies

SAMPLES = 2_000
"""Latencies per simulated run."""
WITHIN = 0.2
"""Log spread of the latencies inside one run."""
RERUNS = 3
OUTCOMES = ("reproduced", "changed", "inconclusive")


@dataclass(slots=True)
class Tally:
    """Counts over trials."""

    trials: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    apart: int = 0
    """Trials whose reruns' medians disagree by more than the band."""
    apart_reproduced: int = 0
    inside: int = 0
    """Trials whose original median lies inside the reruns' prediction interval."""

    def add(self, outcome: str, apart: bool, inside: bool) -> None:
        self.trials += 1
        self.outcomes[outcome] += 1
        self.apart += apart
        self.apart_reproduced += apart and outcome == "reproduced"
        self.inside += inside

    def merge(self, other: Tally) -> None:
        self.trials += other.trials
        for name in OUTCOMES:
            self.outcomes[name] += other.outcomes[name]
        self.apart += other.apart
        self.apart_reproduced += other.apart_reproduced
        self.inside += other.inside

    def share(self, outcome: str) -> float:
        return self.outcomes[outcome] / self.trials


@dataclass(frozen=True, slots=True)
class Target:
    """What a scenario must show: a measured value and whether it meets what is wanted."""

    measure: str
    wanted: str
    value: Callable[[Tally], float]
    met: Callable[[Tally], bool]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    seed: int
    trials_per_set: int
    original: float
    """The original run's true median (ns)."""
    reruns: tuple[float, ...]
    """The reruns' true medians (ns)."""
    sigma: float
    """Run-to-run log spread of each run's median."""
    target: Target


def _coverage() -> Target:
    return Target(
        "share inside the 99% interval",
        "0.98-1.0",
        lambda t: t.inside / t.trials,
        lambda t: 0.98 <= t.inside / t.trials <= 1.0,
    )


def _all_inconclusive() -> Target:
    return Target(
        "share inconclusive",
        "1 (every trial)",
        lambda t: t.share("inconclusive"),
        lambda t: t.outcomes["inconclusive"] == t.trials,
    )


def _never_reproduced_apart() -> Target:
    return Target(
        "reproduced among reruns apart > band",
        "0",
        lambda t: t.apart_reproduced / t.apart if t.apart else 0.0,
        lambda t: t.apart_reproduced == 0,
    )


def _reproduced() -> Target:
    return Target(
        "share reproduced",
        ">= 0.9, changed <= 0.01",
        lambda t: t.share("reproduced"),
        lambda t: t.share("reproduced") >= 0.9 and t.share("changed") <= 0.01,
    )


def _changed() -> Target:
    return Target(
        "share changed",
        ">= 0.95",
        lambda t: t.share("changed"),
        lambda t: t.share("changed") >= 0.95,
    )


US = 1_000.0
SCENARIOS = (
    Scenario("coverage, sigma 0.1", 1, 800, 100 * US, (100 * US,) * RERUNS, 0.1, _coverage()),
    Scenario(
        "demo: 8.5/12/17.4 us, original 12.2 us",
        2,
        40,
        12.2 * US,
        (8.5 * US, 12 * US, 17.4 * US),
        0.0,
        _all_inconclusive(),
    ),
    *(
        Scenario(
            f"wide noise, sigma {s}",
            3 + i,
            400,
            100 * US,
            (100 * US,) * RERUNS,
            s,
            _never_reproduced_apart(),
        )
        for i, s in enumerate((0.15, 0.3, 0.6))
    ),
    *(
        Scenario(
            f"tight noise, sigma {s}",
            6 + i,
            400,
            100 * US,
            (100 * US,) * RERUNS,
            s,
            _reproduced(),
        )
        for i, s in enumerate((0.01, 0.02))
    ),
    *(
        Scenario(
            f"shift +{round(f * 100 - 100)}%, sigma 0.02",
            8 + i,
            400,
            100 * US,
            (100 * US * f,) * RERUNS,
            0.02,
            _changed(),
        )
        for i, f in enumerate((1.2, 1.5))
    ),
    Scenario(
        "shift +20%, sigma 0.02, 5 reruns",
        10,
        400,
        100 * US,
        (120 * US,) * 5,
        0.02,
        _changed(),
    ),
)


def run_set(scenario: Scenario, index: int) -> Tally:
    """One trial set of a scenario, from its own fixed seed."""
    rng = np.random.default_rng([scenario.seed, index])
    tally = Tally()
    true = np.log(np.asarray((scenario.original, *scenario.reruns)))
    for _ in range(scenario.trials_per_set):
        medians = true + rng.normal(0.0, scenario.sigma, len(true))
        runs = [rng.lognormal(m, WITHIN, SAMPLES) for m in medians]
        result = compare_latencies(runs[0], runs[1:])
        apart = result.disagreement is not None and result.disagreement > BAND
        lo, hi = result.interval or (float("nan"), float("nan"))
        tally.add(result.outcome, apart, lo <= result.original_median <= hi)
    return tally


def measure(scenario: Scenario, sets: int) -> dict[str, Any]:
    total = Tally()
    per_set = []
    for index in range(sets):
        tally = run_set(scenario, index)
        per_set.append(scenario.target.value(tally))
        total.merge(tally)
    return {
        "scenario": scenario.name,
        "sigma": scenario.sigma,
        "original_ns": scenario.original,
        "reruns_ns": list(scenario.reruns),
        "trials": total.trials,
        **{name: total.share(name) for name in OUTCOMES},
        "apart": total.apart,
        "apart_reproduced": total.apart_reproduced,
        "measure": scenario.target.measure,
        "value": scenario.target.value(total),
        "set_min": min(per_set),
        "set_max": max(per_set),
        "target": scenario.target.wanted,
        "met": scenario.target.met(total),
    }


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"== {report['title']}",
        f"command: {report['command']}",
        f"machine: {m['nproc']} cores, {m['memory_gib']} GiB RAM, {m['cpu_model']}; "
        f"Python {m['python']}",
        f"load average (1/5/15 min): {m['load_at_start']} at start, {m['load_at_end']} at end",
        f"trial sets: {report['runs']} (fractions pooled over all trials; sets: the target's "
        "value in each set, min-max)",
        "",
    ]
    rows = [
        [
            r["scenario"],
            str(r["trials"]),
            f"{r['reproduced']:.4f}",
            f"{r['changed']:.4f}",
            f"{r['inconclusive']:.4f}",
            str(r["apart"]),
            f"{r['measure']} {r['value']:.4f}",
            f"{r['set_min']:.4f}-{r['set_max']:.4f}",
            r["target"],
            "yes" if r["met"] else "NO",
        ]
        for r in report["scenarios"]
    ]
    headers = [
        "scenario",
        "trials",
        "reproduced",
        "changed",
        "inconclusive",
        "apart > band",
        "measured",
        "sets",
        "target",
        "met",
    ]
    lines += table(headers, rows)
    lines.append("")
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    sets = check_runs(args)
    report: dict[str, Any] = {
        "title": "The rerun verdict in simulation: compare_latencies over Monte Carlo trials",
        "command": command_line("bench.bench_verdict", argv),
        "runs": sets,
        "machine": machine(args.tmp),
        "scenarios": [],
        "notes": [
            f"each trial: one original and {RERUNS} reruns (unless named) of {SAMPLES:,} "
            f"log-normal latencies (log spread {WITHIN} within a run), each run's median "
            f"log-normal around the scenario's (sigma run to run); band {BAND:.0%}",
            "apart > band: trials whose reruns' medians disagree by more than the band",
        ],
    }
    for scenario in SCENARIOS:
        start = time.perf_counter()
        log(f"{scenario.name}: {sets} x {scenario.trials_per_set} trials")
        report["scenarios"].append(measure(scenario, sets))
        log(f"  {time.perf_counter() - start:.1f} s")
    report["machine"]["load_at_end"] = load_average()
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stdout.write(render(report))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
