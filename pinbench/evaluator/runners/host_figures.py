"""What a host-timed run's figures are (``host_clock``): the names a worker cannot say, and
how the host's per-call latencies are measured."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pinbench.registry.request import Scenario
    from pinbench.worker.job import Evidence

WORKER_TIMED = (
    "framework_",
    "latency_",
    "ttft_",
    "tpot_",
    "throughput_",
    "queries_",
    "loadgen_",
    "machine_",
    "energy_",
    "peak_",
    "model_added_",
    "chain_",
    "stage_",
)
WORKER_TIMED_NAMES = frozenset({"contended_bool", "samples_count"})
"""What a host-timed run's worker cannot say, by these prefixes and names: every figure of
time, throughput, the machine, energy and memory (not a task's own, ``target_trials_count``),
a chain's end to end and its stages' times (the worker's clock: a host-timed chain's
``framework_latency_*`` is the host's, each query's whole chain across the pipe). The host
records its own (memory: ``process.host_memory``)."""


def worker_timed(name: str) -> bool:
    """A figure a host-timed run's worker cannot say (``WORKER_TIMED``)."""
    return name.startswith(WORKER_TIMED) or name in WORKER_TIMED_NAMES


LATENCIES = (
    "per model call, on the host's clock: from the later of its queries' issue and the previous "
    "answer to its answer's arrival, the crossing included"
)


def record(
    t: dict[str, Any], scenario: Scenario, log_dir: Path, evidence: Evidence, clock: dict[str, Any]
) -> None:
    """The host's figures of its test ``t`` (``HostClock``'s) in place of whatever the worker
    said of time and the machine, its LoadGen log from ``log_dir``; ``clock``: the run's
    ``details.clock``."""
    import numpy as np

    from pinbench.energy.meter import record as record_energy
    from pinbench.evaluator.dropped import name_dropped
    from pinbench.worker import contention
    from pinbench.worker.latency_metrics import loadgen_figures, series
    from pinbench.worker.loadgen_files import read_logs
    from pinbench.worker.undefined import DETAILS_KEY

    calls, samples = t["calls"], t["samples"]
    dropped = sorted(k for k in evidence.metrics if worker_timed(k))
    for key in dropped:
        del evidence.metrics[key]
    name_dropped(evidence.details, dropped)
    performance = scenario.mode == "performance"
    latencies = np.asarray(calls, dtype=np.int64)
    figures = loadgen_figures(t["summary"], scenario.name, scenario.percentile / 100.0)
    figures.update(series(latencies, "framework_latency"))
    figures["framework_calls_count"] = float(latencies.size)
    figures["samples_count"] = float(samples)
    if t["span_ns"] > 0:
        figures["framework_throughput_sps"] = samples / (t["span_ns"] / 1e9)
    if performance:
        figures.update(contention.figures(t["machine"]))
        evidence.details["machine"] = contention.details(t["machine"])
        gone = contention.undefined(t["machine"])
        if gone:  # beside the worker's own undefined figures, if any
            kept = evidence.details.get(DETAILS_KEY)
            evidence.details[DETAILS_KEY] = {**(kept if isinstance(kept, dict) else {}), **gone}
    evidence.metrics.update(figures)
    evidence.details.pop("energy", None)
    record_energy(t["energy"], samples, evidence.metrics, evidence.details)
    evidence.details["loadgen"] = t["summary"]
    evidence.logs = read_logs(log_dir) or None  # the host's LoadGen's, never the worker's
    evidence.details["clock"] = clock
    evidence.latencies = latencies
