"""What ``pinbench run LOCK`` (the local runner) spends before its first query, split into
phases: the CPU seconds of each, in one child process per run.

The split of the local runner's overhead (``bench/bench_runners.py``, docs/benchmarks.md §5):
the digits logistic regression (``vision/digits-logreg`` 1.2.0 on ONNX Runtime, SingleStream,
as there) is run by a child interpreter that calls the CLI's ``main`` with
``run LOCK --runner local --json`` and reads ``time.process_time()`` (this process's user +
system CPU since it started) at these points:

* start: the interpreter is up (Python's own start);
* framework: ``import onnxruntime`` done, before anything of pinbench is imported (the
  framework's import, which any harness pays);
* model load: the time inside ``OnnxRuntimePredictor.open`` (the session built from the
  model's bytes), summed;
* first query: the first ``predict`` call (the warm-up's first, before LoadGen's timed queries);
* end: ``main`` returned (the timed queries, scoring and recording).

pinbench's part before the first query = first query - framework - model load: importing
pinbench (CLI, registry, evaluator), checking the lockfile against the registry, verifying every
pinned byte (cache hit), reading the dataset and preprocessing it, starting LoadGen. Target
(issue 67): <= 0.3 s CPU. Medians over ``--runs``, with ``python -c pass`` and
``python -c 'import onnxruntime'`` measured in the same run as baselines.

Run: ``.venv/bin/python -m bench.bench_run_phases --runs 11`` (``--json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench._common import Check, Report, check_runs, command_line, log, machine, parser, scratch
from bench.bench_cli import cpu_seconds
from bench.bench_runners import _cli, published_digits

TARGET_S = 0.3

CHILD = """
import json, sys, time
stamps = {"start": time.process_time()}
import onnxruntime  # noqa: F401  the framework, before anything of pinbench
stamps["framework"] = time.process_time()
from pinbench.worker.predictors.onnxruntime.predictor import OnnxRuntimePredictor as P
opened, predicted, loading = P.open, P.predict, [0.0]
def open_(self, model, options):
    began = time.process_time()
    try:
        return opened(self, model, options)
    finally:
        loading[0] += time.process_time() - began
def predict(self, batch):
    stamps.setdefault("first query", time.process_time())
    return predicted(self, batch)
P.open, P.predict = open_, predict
from pinbench.cli import main
code = main(["run", sys.argv[2], "--runner", "local", "--json"])
stamps["end"] = time.process_time()
stamps["model load"] = loading[0]
with open(sys.argv[1], "w") as f:
    json.dump(stamps, f)
sys.exit(code)
"""


def phases(env: dict[str, str], lock: Path, record: Path) -> dict[str, float]:
    """One run's phases (CPU seconds)."""
    cpu_seconds([sys.executable, "-c", CHILD, str(record), str(lock)], env)
    stamps: dict[str, float] = json.loads(record.read_text())
    load = stamps["model load"]
    return {
        "interpreter start": stamps["start"],
        "framework import (onnxruntime)": stamps["framework"] - stamps["start"],
        "model load (session from the model's bytes)": load,
        "pinbench before the first query": stamps["first query"] - stamps["framework"] - load,
        "first query to exit (warm-up, timed queries, scoring, record)": stamps["end"]
        - stamps["first query"],
    }


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="pinbench run (local runner, digits logreg): CPU seconds per phase, child process",
        command=command_line("bench.bench_run_phases", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "run-phases", keep=args.keep) as root:
        env, lock = published_digits(root)
        _cli(env, "run", str(lock), "--runner", "local", "--json")  # untimed: caches filled
        record = root / "stamps.json"
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            base = report.metric("python -c pass", "s CPU")
            base.values.append(cpu_seconds([sys.executable, "-c", "pass"], env))
            framework = report.metric("python -c 'import onnxruntime'", "s CPU")
            framework.values.append(cpu_seconds([sys.executable, "-c", "import onnxruntime"], env))
            for phase, seconds in phases(env, lock, record).items():
                report.metric(phase, "s CPU").values.append(seconds)
    before = report.metric("pinbench before the first query", "s CPU").median
    report.checks.append(
        Check(
            "pinbench before the first query", before, "s CPU", f"<= {TARGET_S}", before <= TARGET_S
        )
    )
    report.notes.append("phases read with time.process_time() in the child; medians of each")
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
