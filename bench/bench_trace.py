"""Tracing overhead: SingleStream p50 at each trace level divided by the p50 of an untraced run
of the same lockfile, per framework.

The digits CNN (``pinbench.catalog``'s ``cnn`` part, built into the scratch directory) in ONNX
Runtime, PyTorch and TensorFlow, batch size 1, one intra-op thread, the local runner (this
interpreter). Each run evaluates the same lockfile at every level, the level order rotating
from run to run; the ratio p50(level) / p50(none) is taken within a run and its median over
runs reported, with the p50s themselves, each traced run's wall time (trace post-processing
included) and the size of its stored Chrome trace. No target: the issue asks for the overhead
to be measured and stated (``docs/benchmarks.md``).

Run: ``.venv/bin/python -m bench.bench_trace --runs 5`` (``--json``; ``--duration-ms`` sets
each run's LoadGen minimum duration, default 1000).
"""

from __future__ import annotations

import time

from bench._common import Report, check_runs, command_line, log, machine, parser, scratch
from pinbench import catalog
from pinbench.artifacts.digest import Digest
from pinbench.catalog import DATASET_NAME, cnn
from pinbench.config import Settings
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.trace.levels import LEVELS
from pinbench.workspace import Workspace

FRAMEWORKS = ("onnxruntime", "torch", "tensorflow")


def quiet(text: str) -> None:
    pass


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--duration-ms", type=int, default=1000, help="LoadGen min_duration_ms")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="tracing overhead: SingleStream p50 at each trace level / p50 untraced",
        command=command_line("bench.bench_trace", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "trace", keep=args.keep) as root:
        log("building the catalog (digits, CNN in three frameworks)")
        built = catalog.build(root / "catalog", ["digits", "cnn"])
        ws = Workspace(Settings(home=root / "home", database_url=f"sqlite:///{root}/db"))
        ws.init()
        for path in built.manifests:
            publish(ws, load_manifest(path), manifest_dir=root / "catalog", publisher="bench")
        scenario = {"min_duration_ms": args.duration_ms, "min_query_count": 200}
        for fw in FRAMEWORKS:
            request = {
                "model": f"{cnn.model_name(fw)}@^1",
                "dataset": f"{DATASET_NAME}@1",
                "threads": 1,
                "scenario": scenario,
            }
            lock, _ = service.lock(ws, parse_request(request))
            for run in range(runs):
                shift = run % len(LEVELS)
                p50: dict[str, float] = {}
                for level in LEVELS[shift:] + LEVELS[:shift]:
                    log(f"{fw}: run {run + 1}/{runs}, level {level}")
                    t0 = time.perf_counter()
                    outcome = run_lockfile(ws, lock, runner="local", say=quiet, trace=level)
                    wall = time.perf_counter() - t0
                    info = show_run(ws, outcome.id)
                    p50[level] = info["framework_latency_p50_ns"]  # the profiled call
                    report.metric(f"[{fw}] p50 at {level}", "µs").values.append(p50[level] / 1e3)
                    report.metric(f"[{fw}] run wall time at {level}", "s").values.append(wall)
                    if info["trace_sha256"]:
                        size = ws.store.path(Digest(info["trace_sha256"])).stat().st_size
                        report.metric(f"[{fw}] trace size at {level}", "MB").values.append(
                            size / 1e6
                        )
                for level in LEVELS[1:]:
                    report.metric(f"[{fw}] ratio p50 {level} / none", "x").values.append(
                        p50[level] / p50["none"]
                    )
        ws.close()
    report.notes += [
        "local runner, one intra-op thread, batch size 1; each level runs the same lockfile; "
        f"LoadGen SingleStream with min_duration_ms {args.duration_ms}, min_query_count 200",
        "model: pipeline spans only (the timed region is unchanged; predict starts are kept); "
        "framework: the framework's profiler on from before the model loads to the end of the "
        "scenario; system: a sampler thread every 10 ms (CPU from /proc, RSS; no NVML here)",
        "the ratio is computed within each run, then its median over runs is shown",
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
