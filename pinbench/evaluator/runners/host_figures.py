"""What a host-timed run's figures are (``host_clock``): the names a worker cannot say, and
how the host's per-call latencies are measured."""

from __future__ import annotations

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
