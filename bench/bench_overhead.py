"""Harness overhead: pinbench's SingleStream against a bare loop over the same ONNX Runtime
session in the same process.

Models, built by ``pinbench.catalog`` into the scratch directory: the digits logistic
regression (``vision/digits-logreg`` 1.1.0, a few microseconds per inference) and the digits
CNN (about ten), both with one intra-op thread; ResNet-50 with seeded weights (tens of
milliseconds) with ONNX Runtime's default threads. Inputs are the preprocessed samples, in
memory, batch size 1.

Each run, for each model, alternating which goes first:

* bare: ``t0 = perf_counter_ns(); session.run(...); t1 = ...`` over the samples in order,
  after the same warm-up; its p50;
* pinbench: ``pinbench.worker.scenarios.run_scenario`` (LoadGen SingleStream, the same
  query count) calling ``OnnxRuntimePredictor.predict`` on the same session. Two figures:
  pinbench's reported p50 (its timed region around ``predict``) and LoadGen's own p50 (issue
  to completion: LoadGen's C++ queueing, its Python binding, pinbench's callback).

* host-timed: the same model in a child process answering LoadGen in this one through the
  rings in shared memory, woken through two pipes (``runners.host_clock``, ``worker.clock_ring``,
  as a run whose model carries code is timed: ``_host_timed``); its LoadGen p50 less pinbench's
  is the crossing's cost per query; again across a Unix socket (``runners.clock_link``, as the
  docker runner's container answers); and, the baseline measured in the same run, through the
  pipes alone (as before decision 314, and as a machine without the rings still does), which of
  the two goes first alternating. Targets (issue 84, item 3): a crossing of at most 5 µs quiet
  and at most 25 µs beside busy loops.

Reported (median over runs): each p50; the floor (a minimal SUT, see ``_floor``); overhead =
LoadGen p50 - bare p50 (the whole harness) and pinbench p50 - bare p50 (what pinbench's timed
region adds). Targets: digits, absolute overhead per query <= 2 µs (LoadGen's Python binding
alone is about 1.7 µs); ResNet-50, ratio LoadGen p50 / bare p50 <= 1.01.

With ``--busy``, each run measures LoadGen in-process and host-timed again beside busy loops,
one on each CPU (``while True: pass``): the crossing where other work takes the machine.

Run: ``.venv/bin/python -m bench.bench_overhead --runs 5`` (``--json``; ``--busy``; ``--models
digits-logreg,digits-cnn`` leaves out ResNet-50, which takes most of the time; ``--cpu N``
holds this process to CPU N while the in-process sides (bare, pinbench, floor) run, so that
LoadGen's threads and the callback share one core; the host-timed sides keep every core, as a
run's worker and host do. On this project's 2-core machine it did not steady the floor:
docs/benchmarks.md §27).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from bench._common import Check, Report, check_runs, command_line, log, machine, parser, scratch
from pinbench import catalog
from pinbench.registry.manifest import load_manifest
from pinbench.registry.request import Scenario
from pinbench.worker.loadgen_test import start_test
from pinbench.worker.pipeline import preprocess
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.onnxruntime import OnnxRuntimePredictor
from pinbench.worker.scenarios import run_scenario, settings_for

TARGET_ABS_NS = 2_000
TARGET_RATIO = 1.01
WARMUP = 200
# label -> (model manifest, dataset manifest, threads, queries per run)
MODELS = {
    "digits-logreg": ("model-digits-logreg-1.1.0.yaml", "dataset-digits-test.yaml", 1, 20_000),
    "digits-cnn": ("model-digits-cnn-onnx.yaml", "dataset-digits-test.yaml", 1, 20_000),
    "resnet50": ("model-resnet50-onnx.yaml", "dataset-synthetic-imagenet-224.yaml", None, 200),
}


def _source(root: Path, source: str | None) -> Path:
    assert source is not None and source.startswith("file:"), source
    return root / source.removeprefix("file:")


def _open(root: Path, model: str, dataset: str, threads: int | None) -> tuple[Any, np.ndarray]:
    manifest = load_manifest(root / model)
    entry = manifest.files[0]  # type: ignore[union-attr]
    files = {entry.path: _source(root, entry.source)}
    predictor = OnnxRuntimePredictor()
    predictor.open(ModelFiles(files, "onnx"), PredictorOptions(threads=threads))
    data_manifest = load_manifest(root / dataset)
    data_file = next(f for f in data_manifest.files if f.path == "images.npy")  # type: ignore[union-attr]
    raw = np.load(_source(root, data_file.source), allow_pickle=False)
    inputs = preprocess(raw, manifest.inputs[0])  # type: ignore[union-attr]
    return predictor, inputs


def _bare(predictor: OnnxRuntimePredictor, inputs: np.ndarray, queries: int) -> float:
    session, name, outputs, views = _session(predictor, inputs)
    for i in range(WARMUP):
        session.run(outputs, {name: views[i % len(views)]})
    clock = time.perf_counter_ns
    lat = []
    for i in range(queries):
        x = views[i % len(views)]
        t0 = clock()
        session.run(outputs, {name: x})
        lat.append(clock() - t0)
    return float(np.median(lat))


def _pinbench(
    predictor: OnnxRuntimePredictor, inputs: np.ndarray, queries: int, log_dir: Path
) -> tuple[float, float]:
    for i in range(WARMUP):
        predictor.predict(inputs[i % len(inputs) : i % len(inputs) + 1])
    scenario = Scenario(
        name="SingleStream", min_duration_ms=0, min_query_count=queries, max_query_count=queries
    )
    m = run_scenario(
        predictor.predict,
        inputs,
        scenario,
        batch_size=1,
        expected_latency_ns=10_000,
        log_dir=log_dir,
    )
    return float(np.median(m.latencies_ns)), float(m.loadgen["result_50.00_percentile_latency_ns"])


def _session(
    predictor: OnnxRuntimePredictor, inputs: np.ndarray
) -> tuple[Any, str, list[str], list[np.ndarray]]:
    """The predictor's own ORT session, its input and output names, and per-sample views: what
    a bare loop calls directly (no wrapper in between)."""
    session = predictor._session
    assert session is not None
    views = [inputs[i : i + 1] for i in range(len(inputs))]
    return session, predictor._input, predictor._outputs, views


def _floor(
    predictor: OnnxRuntimePredictor, inputs: np.ndarray, queries: int, log_dir: Path
) -> float:
    """LoadGen p50 of the least a Python SUT can do: ``session.run`` and
    ``QuerySamplesComplete`` in the issue callback, no timing, no bookkeeping."""
    session, name, outputs, views = _session(predictor, inputs)

    def issue(queries: list[Any]) -> None:
        q = queries[0]
        session.run(outputs, {name: views[q.index]})
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0)])

    scenario = Scenario(
        name="SingleStream", min_duration_ms=0, min_query_count=queries, max_query_count=queries
    )
    settings = settings_for(scenario, expected_latency_ns=10_000, batch_size=1)
    summary = start_test(issue, len(views), settings, log_dir)
    return float(summary["result_50.00_percentile_latency_ns"])


def _queries_scenario(queries: int) -> Scenario:
    return Scenario(
        name="SingleStream", min_duration_ms=0, min_query_count=queries, max_query_count=queries
    )


def _host_timed(
    root: Path,
    label: str,
    queries: int,
    log_dir: Path,
    socket_dir: Path | None = None,
    rings: bool = True,
) -> tuple[float, float]:
    """LoadGen p50 of the model answering from a child process across the host clock's pipes
    (or, with ``socket_dir``, its Unix socket there, as a container answers:
    ``runners.clock_link``), through the rings in shared memory (``worker.clock_ring``) or,
    without ``rings``, through the pipes alone (as before decision 314), and the crossing's
    round trip the host measured before the test (both ns)."""
    import subprocess
    import sys

    from pinbench.evaluator.runners.clock_link import PipeLink, SocketLink
    from pinbench.evaluator.runners.host_clock import HostClock
    from pinbench.worker.job import Evidence
    from pinbench.worker.stop import Stop

    if socket_dir is not None:
        socket_dir.mkdir(parents=True, exist_ok=True)
    link = PipeLink(rings) if socket_dir is None else SocketLink(socket_dir)
    clock = HostClock(_queries_scenario(queries), 1, None, log_dir, Stop(), link)
    fds = clock.worker_fds()
    argv = [sys.executable, "-m", "bench.bench_overhead", "--answer", str(root), label]
    where = [str(fd) for fd in fds] if fds else [str(getattr(link, "path", ""))]
    child = subprocess.Popen([*argv, *where], pass_fds=fds)
    clock.start(child.pid)
    if child.wait() != 0:
        clock.close()
        raise SystemExit(f"the answering process failed ({child.returncode})")
    evidence = Evidence()
    try:
        clock.apply(evidence)
    finally:
        clock.close()
    p50 = float(evidence.details["loadgen"]["result_50.00_percentile_latency_ns"])
    return p50, float(evidence.details["clock"]["crossing_ns"])


def _both_ways(run: int, root: Path, label: str, queries: int) -> tuple[float, float, float]:
    """The host-timed LoadGen p50 and ping through the rings, and the p50 through the pipes
    alone, which goes first alternating from run to run."""
    if run % 2 == 0:
        timed, crossing = _host_timed(root, label, queries, root / "host-timed")
        piped, _ = _host_timed(root, label, queries, root / "host-timed", rings=False)
    else:
        piped, _ = _host_timed(root, label, queries, root / "host-timed", rings=False)
        timed, crossing = _host_timed(root, label, queries, root / "host-timed")
    return timed, crossing, piped


def _answer(root: Path, label: str, where: list[str]) -> int:
    """The child of ``_host_timed``: the model opened and warmed up as the parent's, then its
    queries answered as a host-timed worker answers them, across the pipes' descriptors or
    the socket ``where`` names."""
    from pinbench.worker.remote_test import RemoteTest, connected

    model, dataset, threads, queries = MODELS[label]
    predictor, inputs = _open(root, model, dataset, threads)
    for i in range(WARMUP):
        predictor.predict(inputs[i % len(inputs) : i % len(inputs) + 1])
    fds = [int(w) for w in where] if where[0].isdigit() else connected(where[0])
    run_scenario(
        predictor.predict,
        inputs,
        _queries_scenario(queries),
        batch_size=1,
        expected_latency_ns=10_000,
        log_dir=root / "unused",
        remote=RemoteTest(fds),
    )
    predictor.close()
    return 0


@contextlib.contextmanager
def _busy(count: int) -> Iterator[None]:
    """``count`` processes that spin (``while True: pass``) while the block runs: other work
    on every core, as the metric trial's busy side."""
    import subprocess
    import sys

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5)  # spinning before the first query
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main(argv: list[str] | None = None) -> int:
    import sys

    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["--answer"]:
        return _answer(Path(given[1]), given[2], given[3:])
    p = parser(__doc__ or "")
    p.add_argument(
        "--models",
        default=",".join(MODELS),
        help=f"which models, comma-separated (default: all of {', '.join(MODELS)})",
    )
    p.add_argument(
        "--busy",
        action="store_true",
        help="also measure LoadGen in-process and host-timed beside busy loops, one on each CPU "
        "this process may use (each run: quiet first, then busy)",
    )
    p.add_argument(
        "--cpu",
        type=int,
        default=None,
        help="hold the in-process sides to this CPU (default: every CPU this process may use)",
    )
    args = p.parse_args(argv)
    chosen = [m for m in args.models.split(",") if m]
    every = os.sched_getaffinity(0)
    if args.cpu is not None and args.cpu not in every:
        p.error(f"--cpu: this process may run on CPUs {sorted(every)}, not {args.cpu}")
    pinned = every if args.cpu is None else {args.cpu}
    if not chosen or set(chosen) - set(MODELS):
        p.error(f"--models: choose among {', '.join(MODELS)}")
    runs = check_runs(args)
    report = Report(
        title="harness overhead: pinbench SingleStream vs a bare ONNX Runtime loop",
        command=command_line("bench.bench_overhead", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "overhead", keep=args.keep) as root:
        log("building the catalog (digits, CNN, ResNet-50)")
        catalog.build(root, ["digits", "cnn", "resnet50"])
        for label in chosen:
            model, dataset, threads, queries = MODELS[label]
            predictor, inputs = _open(root, model, dataset, threads)
            for run in range(runs):
                log(f"{label}: run {run + 1}/{runs}")
                os.sched_setaffinity(0, pinned)
                if run % 2 == 0:
                    bare = _bare(predictor, inputs, queries)
                    ours, loadgen = _pinbench(predictor, inputs, queries, root / "loadgen")
                else:
                    ours, loadgen = _pinbench(predictor, inputs, queries, root / "loadgen")
                    bare = _bare(predictor, inputs, queries)
                floor = _floor(predictor, inputs, queries, root / "floor")
                os.sched_setaffinity(0, every)
                timed, crossing, piped = _both_ways(run, root, label, queries)
                over_socket, _ = _host_timed(
                    root, label, queries, root / "host-timed", root / f"socket-{run}"
                )
                unit = "µs"
                scale = 1e3
                report.metric(f"[{label}] bare p50", unit).values.append(bare / scale)
                report.metric(f"[{label}] pinbench p50 (timed region)", unit).values.append(
                    ours / scale
                )
                report.metric(f"[{label}] LoadGen p50 (issue to completion)", unit).values.append(
                    loadgen / scale
                )
                report.metric(f"[{label}] overhead LoadGen - bare", unit).values.append(
                    (loadgen - bare) / scale
                )
                report.metric(f"[{label}] overhead pinbench - bare", unit).values.append(
                    (ours - bare) / scale
                )
                report.metric(f"[{label}] ratio LoadGen / bare", "x").values.append(loadgen / bare)
                report.metric(f"[{label}] floor: minimal SUT LoadGen p50", unit).values.append(
                    floor / scale
                )
                report.metric(
                    f"[{label}] pinbench's share: LoadGen p50 - floor", unit
                ).values.append((loadgen - floor) / scale)
                report.metric(f"[{label}] host-timed LoadGen p50", unit).values.append(
                    timed / scale
                )
                report.metric(
                    f"[{label}] crossing per query: host-timed - LoadGen p50", unit
                ).values.append((timed - loadgen) / scale)
                report.metric(
                    f"[{label}] crossing: the host's ping round trip", unit
                ).values.append(crossing / scale)
                report.metric(
                    f"[{label}] crossing per query over a socket (docker)", unit
                ).values.append((over_socket - loadgen) / scale)
                report.metric(
                    f"[{label}] crossing per query, the pipes alone (baseline)", unit
                ).values.append((piped - loadgen) / scale)
                report.metric(f"[{label}] crossing: rings / pipes alone", "x").values.append(
                    (timed - loadgen) / max(piped - loadgen, 1.0)
                )
                if args.busy:
                    with _busy(len(every)):
                        _, busy_loadgen = _pinbench(predictor, inputs, queries, root / "loadgen")
                        busy_timed, busy_ping, busy_piped = _both_ways(run, root, label, queries)
                    report.metric(
                        f"[{label}] busy: crossing per query, the pipes alone (baseline)", unit
                    ).values.append((busy_piped - busy_loadgen) / scale)
                    report.metric(f"[{label}] busy: LoadGen p50", unit).values.append(
                        busy_loadgen / scale
                    )
                    report.metric(f"[{label}] busy: host-timed LoadGen p50", unit).values.append(
                        busy_timed / scale
                    )
                    report.metric(
                        f"[{label}] busy: crossing per query: host-timed - LoadGen p50", unit
                    ).values.append((busy_timed - busy_loadgen) / scale)
                    report.metric(
                        f"[{label}] busy: crossing: the host's ping round trip", unit
                    ).values.append(busy_ping / scale)
            predictor.close()
    for label in [m for m in ("digits-logreg", "digits-cnn") if m in chosen]:
        for name, target in [("crossing per query", 5.0), ("busy: crossing per query", 25.0)]:
            if name.startswith("busy") and not args.busy:
                continue
            crossing = report.metric(f"[{label}] {name}: host-timed - LoadGen p50", "µs").median
            report.checks.append(
                Check(f"[{label}] {name}", crossing, "µs", f"<= {target:g} µs", crossing <= target)
            )
        value = report.metric(f"[{label}] overhead LoadGen - bare", "µs").median
        report.checks.append(
            Check(
                f"[{label}] overhead per query, LoadGen p50 - bare p50",
                value,
                "µs",
                f"<= {TARGET_ABS_NS / 1e3:g} µs",
                value * 1e3 <= TARGET_ABS_NS,
            )
        )
    if "resnet50" in chosen:
        ratio = report.metric("[resnet50] ratio LoadGen / bare", "x").median
        report.checks.append(
            Check(
                "[resnet50] LoadGen p50 / bare p50",
                ratio,
                "x",
                f"<= {TARGET_RATIO}",
                ratio <= TARGET_RATIO,
            )
        )
    report.notes += [
        f"in-process sides on CPUs {sorted(pinned)}; host-timed sides on {sorted(every)}",
        f"each run: {WARMUP} untimed warm-up predictions before each side; digits models "
        f"{MODELS['digits-cnn'][3]:,} queries per side, ResNet-50 {MODELS['resnet50'][3]}",
        "bare and pinbench alternate which goes first from run to run; same process, "
        "same InferenceSession, same in-memory preprocessed inputs",
        "LoadGen p50 is LoadGen's result_50.00_percentile_latency_ns (its own clock, from "
        "issuing a query to QuerySamplesComplete)",
        "floor: the same LoadGen test with the least possible Python SUT (session.run and "
        "QuerySamplesComplete in the callback, nothing else), measured after both sides; "
        "LoadGen p50 - floor is what pinbench's own callback adds",
        "host-timed: the same model and queries in a child process (not sandboxed: the "
        "namespaces change no pipe's cost), LoadGen in this one (runners.host_clock); "
        "host-timed - LoadGen p50 is what a run whose model carries code pays per query; "
        "its TEST04 audit runs after the test and is not timed here; 'over a socket' is "
        "the same across the Unix socket the docker runner binds into its container "
        "(runners.clock_link), the child a process of this machine",
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
