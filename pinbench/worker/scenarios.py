"""MLPerf scenarios through LoadGen: SingleStream, MultiStream, Server, Offline, in performance
or accuracy mode.

LoadGen issues queries; the system under test answers them by calling ``predict`` on
preprocessed, in-memory batches. The timed region (``perf_counter_ns`` around ``predict``) holds
the framework call and nothing else; those per-query times are kept raw. LoadGen's own
summary (its percentiles, throughput and validity verdict) is read from its detail log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt

from pinbench import bounds as b
from pinbench.errors import UserError
from pinbench.registry.request import Scenario, planned_refusal
from pinbench.worker import contention
from pinbench.worker.contention import Activity
from pinbench.worker.latency_metrics import loadgen_figures, series
from pinbench.worker.loadgen_test import metered_test
from pinbench.worker.output_axes import one_sample
from pinbench.worker.stop import Stop
from pinbench.worker.undefined import DETAILS_KEY

if TYPE_CHECKING:
    from pinbench.worker.remote_test import RemoteTest

Array = npt.NDArray[np.generic]
Outputs = dict[str, Array]
"""One prediction: each declared output by name (``predictors.base.Outputs``)."""
Predict = Callable[[Array], Outputs]

HOST_TIMED = "timed by the host (runners.host_clock)"
"""A remote test's machine reading: the host's is recorded."""

_SCENARIOS = {
    "SingleStream": lg.TestScenario.SingleStream,
    "MultiStream": lg.TestScenario.MultiStream,
    "Server": lg.TestScenario.Server,
    "Offline": lg.TestScenario.Offline,
}


class ScenarioError(UserError):
    def __init__(self, *, setting: str, reason: str) -> None:
        super().__init__(f"scenario setting {setting}: {reason}")
        self.setting = setting
        self.reason = reason


class Tested:
    """What a LoadGen test leaves beside its timings (``Measurement``, a generation's
    ``TokenMeasurement``): LoadGen's log and what the machine did meanwhile."""

    loadgen: dict[str, Any]
    machine: Activity | str
    """What else the machine did while LoadGen's test ran (``contention``), or why unread."""
    performance: bool
    """A performance run: its timings count, and so does what the machine did meanwhile."""

    def details(self) -> dict[str, Any]:
        """What a run's details keep of the test: LoadGen's log (``loadgen``) and, in a
        performance run, the machine's readings (``machine``: ``contention.details``) and the
        machine figures they leave undefined, with their reasons (``DETAILS_KEY``)."""
        out: dict[str, Any] = {"loadgen": self.loadgen}
        if self.performance:
            out["machine"] = contention.details(self.machine)
            gone = contention.undefined(self.machine)
            if gone:
                out[DETAILS_KEY] = gone
        return out

    def machine_figures(self) -> dict[str, float]:
        """A performance run's machine metrics (``contention.figures``); none else."""
        return contention.figures(self.machine) if self.performance else {}


@dataclass
class Measurement(Tested):
    """What one scenario run measured."""

    latencies_ns: npt.NDArray[np.int64]
    """Framework time of each ``predict`` call, in issue order."""
    starts_ns: npt.NDArray[np.int64]
    """When each ``predict`` call began (``perf_counter_ns``), for the trace's spans."""
    samples: int
    """Samples answered."""
    duration_ns: int
    """From the first query issued to the last answer."""
    loadgen: dict[str, Any]
    scenario: str
    """The LoadGen scenario it ran (MultiStream's headline latencies are per query)."""
    target: float
    """The scenario's target percentile as a fraction (``scenario.percentile / 100``)."""
    outputs: dict[int, Outputs] = field(default_factory=dict)
    """Accuracy mode (or ``keep_outputs``): the model's outputs for each sample index, by
    name, each with a batch axis of one."""
    machine: Activity | str = "not read"
    performance: bool = True
    timed_here: bool = True
    """LoadGen ran beside the model; else the host timed the test (``remote``) and records its
    figures: this measurement's summary has none of its own timings."""

    def summary(self) -> dict[str, float]:
        """Metrics with their units in their names: LoadGen's ``latency_p99_ns``,
        ``throughput_sps`` and ``queries_count`` (its summary's), pinbench's
        ``framework_latency_p99_ns`` (the framework calls), both by LoadGen's percentile rule
        (``pinbench.worker.latency_metrics``), ``framework_calls_count`` and
        ``framework_throughput_sps`` (samples answered over first query received → last call
        returned; decision 275); in a performance run, what else the machine did meanwhile
        (``contention.figures``)."""
        if not self.timed_here:
            return {}
        out = loadgen_figures(self.loadgen, self.scenario, self.target)
        out.update(series(self.latencies_ns, "framework_latency"))
        out["framework_calls_count"] = float(self.latencies_ns.size)
        out["samples_count"] = float(self.samples)
        if self.duration_ns > 0:
            out["framework_throughput_sps"] = self.samples / (self.duration_ns / 1e9)
        out.update(self.machine_figures())
        return out


def settings_for(scenario: Scenario, *, expected_latency_ns: int, batch_size: int) -> Any:
    """LoadGen test settings from the lockfile's scenario (quick interactive defaults)."""
    s = lg.TestSettings()
    s.scenario = _SCENARIOS[scenario.name]
    s.mode = (
        lg.TestMode.AccuracyOnly if scenario.mode == "accuracy" else lg.TestMode.PerformanceOnly
    )
    s.min_duration_ms = scenario.min_duration_ms
    s.min_query_count = scenario.min_query_count
    if scenario.max_query_count is not None:
        s.max_query_count = scenario.max_query_count
    s.qsl_rng_seed = scenario.seed
    s.sample_index_rng_seed = scenario.seed
    s.schedule_rng_seed = scenario.seed
    pct = scenario.percentile / 100.0
    expected = max(expected_latency_ns, 1)
    calls = max(1, scenario.samples_per_query // batch_size)  # a MultiStream query's calls
    plan_at = _planning_latency(scenario, expected, calls)
    s.single_stream_expected_latency_ns = plan_at
    s.single_stream_target_latency_percentile = pct
    s.multi_stream_samples_per_query = scenario.samples_per_query
    s.multi_stream_expected_latency_ns = plan_at * calls
    s.multi_stream_target_latency_percentile = pct
    s.offline_expected_qps = max(1.0, batch_size * 1e9 / expected)
    if scenario.name == "Server":
        assert scenario.target_qps is not None
        s.server_target_qps = scenario.target_qps
        latency_ms = scenario.target_latency_ms or 100.0
        s.server_target_latency_ns = int(latency_ms * 1e6)
        s.server_target_latency_percentile = pct
    rates = {
        "SingleStream": 1e9 / s.single_stream_expected_latency_ns,
        "MultiStream": 1e9 / s.multi_stream_expected_latency_ns,
        "Offline": s.offline_expected_qps,
    }
    planned = scenario.planned_samples(rates.get(scenario.name, 0.0))
    if not b.PLANNED_SAMPLES.holds(planned):
        reason = planned_refusal(scenario.name, planned, measured=True)
        raise ScenarioError(setting="min_duration_ms", reason=reason)
    return s


PLAN_MARGIN = 4
"""A SingleStream or MultiStream test is planned for a model up to this many times faster than
its warm-up said. LoadGen stops issuing once ``min_duration_ms`` and ``min_query_count`` are
both met (mlperf_loadgen 6.0, measured: 1,021 queries issued of 40,000 planned), so queries
planned past them are never issued; a test planned for too few ends INVALID, "min_duration not
met". A warm-up slowed by other work on the machine was seen 2.5 times slower than the test
after it (docs/authoring.md's walkthrough, 2026-11-30: 64 queries planned, done in 0.79 s of
a 1 s minimum; a later run of it was about ten times off, past this margin: decision 321).
Offline's one query is never cut short: it is planned at the warm-up's rate."""
PLAN_CHEAP = 20_000
"""The most queries the margin may plan: LoadGen makes every planned query before the first
is issued (microseconds each), so a fast model, which plans hundreds of thousands already and
warms up on as many calls, is planned as measured."""


def _planning_latency(scenario: Scenario, expected: int, calls: int) -> int:
    """The latency a SingleStream or MultiStream test is planned at: the warm-up's
    ``expected`` divided by ``PLAN_MARGIN``, or by 2, where that plans at most ``PLAN_CHEAP``
    queries and samples LoadGen may hold (``bounds.PLANNED_SAMPLES``: a margin never refuses
    a test planned as measured would run); else (and in other scenarios) ``expected``."""
    if scenario.name not in ("SingleStream", "MultiStream"):
        return expected
    multi = scenario.name == "MultiStream"
    per_query, per_call = (scenario.samples_per_query, calls) if multi else (1, 1)
    for margin in (PLAN_MARGIN, 2):
        latency = max(1, expected // margin)
        samples = scenario.planned_samples(1e9 / (latency * per_call))
        if samples // per_query <= PLAN_CHEAP and b.PLANNED_SAMPLES.holds(samples):
            return latency
    return expected


TIMED_ANSWERS_BYTES = 256 * 1024 * 1024
"""The most a host-timed performance test keeps of its first answers (TEST01's by-accuracy
comparison reads them): a segmentation head's 22 MB a sample would have held gigabytes."""


def run_scenario(
    predict: Predict,
    inputs: Array,
    scenario: Scenario,
    *,
    batch_size: int,
    expected_latency_ns: int,
    log_dir: Path,
    stop: Stop | None = None,
    on_caller: bool = False,
    keep_outputs: bool = False,
    batch_axes: dict[str, int] | None = None,
    remote: RemoteTest | None = None,
) -> Measurement:
    """Run one LoadGen test over ``inputs`` (``N`` preprocessed samples, batch axis first).
    ``batch_axes``: the outputs whose answers hold the batch on another axis than the first
    (a ``transpose`` step's, ``output_axes``): a batch's answer is split along it.
    After ``stop`` is requested every query is answered without the model and, once LoadGen
    has ended its test, the stop's error is raised. ``on_caller``: ``predict`` runs on the
    calling thread, not LoadGen's (a profiler that records only the thread it started on:
    PyTorch's); the hand-over adds to LoadGen's latencies, not to pinbench's timed region.
    ``keep_outputs``: keep each sample's outputs in performance mode too (for a model's
    ``postprocess`` code, run after the scenario). ``remote``: LoadGen runs in the host, which
    times the test (``runners.host_clock``): the queries come across its pipe, and the
    measurement holds no LoadGen figure and no timing of the worker's own, but each sample's
    first answer (whose seal the host holds). A sample's first answer is the one kept."""
    total = int(inputs.shape[0])
    if total == 0:
        raise ScenarioError(setting="sample_count", reason="the dataset has no samples")
    count = min(total, scenario.sample_count or total)
    # a host-timed test keeps each sample's first answer too, within a budget: TEST01 may score
    # it (``runners.test01``)
    keep = scenario.mode == "accuracy" or keep_outputs or remote is not None
    budget = TIMED_ANSWERS_BYTES if not (scenario.mode == "accuracy" or keep_outputs) else -1
    latencies: list[int] = []
    starts: list[int] = []
    outputs: dict[int, Outputs] = {}
    failure: list[BaseException] = []
    span = [0, 0, 0]  # first issue (ns), last completion (ns), samples answered

    clock = time.perf_counter_ns
    record = latencies.append
    mark = starts.append
    complete: Callable[[list[Any]], None] = lg.QuerySamplesComplete
    response: Callable[[int, Any, int], Any] = lg.QuerySampleResponse
    sealed: Callable[[Any], Any] | None = None  # LoadGen here: no data handed to it
    if remote is not None:  # the host keeps the clock: each answer's seal goes with its id
        complete, response, sealed = remote.complete, remote.response, remote.seal
    # Batch size 1: one view per sample, sliced once here rather than once per query.
    views = [inputs[i : i + 1] for i in range(count)] if batch_size == 1 else []

    used = [0]

    def kept(index: int, out: Any) -> None:
        """A sample's first answer kept; a host-timed test's while their bytes stay within
        ``budget`` (past it, none: TEST01 then says it had none to score)."""
        if budget >= 0:
            if used[0] > budget:
                return
            used[0] += sum(getattr(v, "nbytes", 0) for v in out.values()) if out else 0
            if used[0] > budget:
                outputs.clear()
                return
        outputs[index] = out

    halted = stop.is_set if stop is not None else (lambda: False)
    axes = batch_axes or {}

    def answer(index: int) -> Any:
        """The hot path (batch size 1): one sample's answer, with as little Python as possible
        around ``predict``. Nothing may propagate into LoadGen (see ``pinbench.worker.stop``):
        after a failure or a stop, the answer is None, the model not called."""
        out = None
        try:
            if not span[0]:
                span[0] = clock()
            if not failure and not halted():
                x = views[index]
                t0 = clock()
                out = predict(x)
                t1 = clock()
                record(t1 - t0)
                mark(t0)
                if keep and index not in outputs:
                    kept(index, out)
                span[1] = t1
                span[2] += 1
        except BaseException as exc:  # handed back to the caller after LoadGen returns
            failure.append(exc)
        return out

    def issue_one(queries: list[Any]) -> None:
        for q in queries:
            out = answer(q.index)
            complete([response(q.id, sealed(out) if sealed else 0, 0)])

    def issue_here(queries: list[Any]) -> None:
        """``issue_one`` where LoadGen runs beside the model (no seal, no answer to send): the
        least Python around ``predict`` (``bench/bench_overhead.py``: pinbench's share over
        LoadGen's minimal system under test). Its span's end and count are read from what it
        recorded, once the test has ended."""
        for q in queries:
            if not span[0]:
                span[0] = clock()
            try:
                if not failure and not halted():
                    t0 = clock()
                    out = predict(views[q.index])
                    t1 = clock()
                    record(t1 - t0)
                    mark(t0)
                    if keep:
                        outputs[q.index] = out
            except BaseException as exc:  # handed back to the caller after LoadGen returns
                failure.append(exc)
            complete([response(q.id, 0, 0)])

    def issue_batched(queries: list[Any]) -> None:
        for start in range(0, len(queries), batch_size):
            chunk = queries[start : start + batch_size]
            each: list[Any] = [None] * len(chunk)
            try:
                if not span[0]:
                    span[0] = clock()
                if not failure and not halted():
                    indexes = [q.index for q in chunk]
                    if len(indexes) > 1:
                        batch = inputs[indexes]
                    else:
                        batch = inputs[indexes[0] : indexes[0] + 1]
                    t0 = clock()
                    out = predict(batch)
                    t1 = clock()
                    record(t1 - t0)
                    mark(t0)
                    if keep or remote is not None:
                        for i, index in enumerate(indexes):
                            each[i] = {k: one_sample(v, i, axes.get(k, 0)) for k, v in out.items()}
                            if keep and index not in outputs:
                                kept(index, each[i])
                    span[1] = t1
                    span[2] += len(chunk)
            except BaseException as exc:
                failure.append(exc)
            complete(
                [
                    response(q.id, sealed(a) if sealed else 0, 0)
                    for q, a in zip(chunk, each, strict=True)
                ]
            )

    here = batch_size == 1 and remote is None
    issue = issue_here if here else issue_one if batch_size == 1 else issue_batched
    settings = settings_for(
        scenario, expected_latency_ns=expected_latency_ns, batch_size=batch_size
    )
    if remote is not None:
        remote.run(issue, count, expected_latency_ns, answer if batch_size == 1 else None)
        summary: dict[str, Any] = {}
        activity: Activity | str = HOST_TIMED
    else:
        summary, activity = metered_test(
            issue, count, settings, log_dir, stop or Stop(), on_caller=on_caller
        )
    if failure:
        raise failure[0]
    if here and latencies:  # to the last call's end
        span[1:] = [starts[-1] + latencies[-1], len(latencies)]
    return Measurement(
        latencies_ns=np.asarray(latencies, dtype=np.int64),
        starts_ns=np.asarray(starts, dtype=np.int64),
        samples=span[2],
        duration_ns=span[1] - span[0],
        loadgen=summary,
        scenario=scenario.name,
        target=scenario.percentile / 100.0,
        outputs=outputs,
        machine=activity,
        performance=scenario.mode == "performance",
        timed_here=remote is None,
    )
