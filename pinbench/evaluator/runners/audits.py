"""MLPerf's TEST04 audit, run by the host before a host-timed performance test (issue 71,
item 3; decision 293): does the system under test answer a sample it has seen before faster
than one it has not (a cache of answers across samples)?

As MLPerf's original TEST04-A and TEST04-B (compliance/nvidia/TEST04 up to v0.7), two more
LoadGen tests on the host's clock: every sample issued once (``performance_issue_unique``),
then one sample issued again and again (``performance_issue_same``, MLPerf's index 3), in as
many queries (``same``). The same sample may be at most ``threshold`` faster: 10%, 20% where
the unique test's latency is short (SingleStream ≤ 200 µs, MultiStream ≤ 1.6 ms), as
verify_performance.py allows. Speed is the scenario's score as MLPerf reads it: SingleStream's
p90 and MultiStream's p99 latency (faster: lower), Server's completed and Offline's samples per
second (faster: higher).
MLPerf's script compares latencies with the throughputs' inequality (a latency under 1.1x the
reference passes); pinbench compares speeds, so the faster repeat fails in every scenario. Where
the score is a latency, the medians must agree that the repeat is faster beyond the threshold
too: pinbench's tests are seconds, not MLPerf's ten minutes, and on a busy machine a p90 of
tens of queries moved past 10% while the medians did not (a cache moves both).

On a busy machine or in a short audit, a repeat that is faster by the clock must also have
taken less of the worker's CPU (``cpu_spared``, read by the host from /proc): a cache spares
work; a machine's scheduling delays do not (decision 296).

A failed audit makes the run INVALID (``loadgen_valid_bool`` 0, its reason with LoadGen's in
``details.loadgen.invalid_reasons``): its figures are never a baseline (``series.gate``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile
    from pinbench.worker.job import Evidence

SAME_INDEX = 3
"""The sample MLPerf's audit.config repeats (the last one where a dataset has fewer)."""

_SCORES = {
    "SingleStream": ("latency_p90_ns", False),
    "MultiStream": ("latency_p99_ns", False),
    "Server": ("throughput_sps", True),
    "Offline": ("throughput_sps", True),
}
"""Each scenario's score and whether a higher one is faster."""

SHORT_NS = {"SingleStream": 200_000, "MultiStream": 1_600_000}
"""Below these latencies MLPerf's threshold is 20%, not 10% (run-to-run noise)."""


def unique(settings: Any, count: int | None = None, per_query: int = 1) -> Any:
    """TEST04-A: every sample issued once. Given the dataset's ``count`` of samples, where the
    score is a latency or a rate of queries, in exactly as many queries as they fill (each of
    ``per_query`` samples): the test's duration does not end it with samples never issued (a
    model of 4.5 ms a sample had 242 of its 450 issued in a second). Offline's one query is
    left as LoadGen plans it."""
    settings.performance_issue_unique = True
    settings.performance_issue_same = False
    if count is not None and settings.scenario != _offline():
        queries = max(1, count // max(1, per_query))
        settings.min_duration_ms = 0
        settings.min_query_count = queries
        settings.max_query_count = queries
    return settings


def same_index(count: int) -> int:
    """The sample TEST04-B repeats among ``count``."""
    return min(SAME_INDEX, count - 1)


def same(settings: Any, count: int, per_query: int = 1) -> Any:
    """TEST04-B: one sample issued again and again, in as many queries as TEST04-A issues
    (each of ``count`` samples once, ``per_query`` to a query) where the score is a latency
    or a rate of queries: a short burst is compared with a burst as short, not with seconds
    of warm repeats (a 10 µs model's unique p90, of its dataset's 64 queries, was 1.74x its
    repeat's of 14,000 with nothing cached). Offline's one query is left as LoadGen plans it."""
    settings.performance_issue_unique = False
    settings.performance_issue_same = True
    settings.performance_issue_same_index = same_index(count)
    if settings.scenario != _offline():
        queries = max(1, count // max(1, per_query))
        settings.min_duration_ms = 0
        settings.min_query_count = queries
        settings.max_query_count = queries
    return settings


def phases(count: int, per_query: int) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """TEST04's two tests in order, each with what it makes of the run's settings."""

    def unique_test(settings: Any) -> Any:
        return unique(settings, count, per_query)

    def same_test(settings: Any) -> Any:
        return same(settings, count, per_query)

    return (("unique", unique_test), ("same", same_test))


def _offline() -> Any:
    import mlperf_loadgen as lg

    return lg.TestScenario.Offline


BUSY_FACTOR = 2.0
"""On a busy machine (``contended``), or in a short audit (``SHORT_AUDIT``), a repeat at least
this much faster still fails: a cache answers orders of magnitude faster; the noise of short
tests, or of tests beside other work, does not."""

SHORT_AUDIT = 1024
"""Fewer unique queries than this (MLPerf's SingleStream minimum query count) make a short
audit: TEST04-A issues each sample once, so a dataset of 64 samples gives 64 queries, whose
percentiles move by more than MLPerf's threshold from run to run (an honest model of 10 µs a
query, audited 7 times across the sandbox's pipe: the repeat 0.32x to 1.83x as fast at p90,
0.73x to 1.58x at the median)."""


def verdict(
    scenario: str,
    target: float,
    unique_log: dict[str, Any],
    same_log: dict[str, Any],
    contended: bool = False,
    repeated: int | None = None,
    queries: int | None = None,
    cpu: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """TEST04's verdict from the two tests' LoadGen summaries: the scores, the speed-up of the
    repeated sample over the unique ones, the threshold, and whether it passed: True, False,
    or None (inconclusive) where either test ran ``contended``, or the unique test issued
    fewer than ``SHORT_AUDIT`` ``queries``, and the repeat was less than ``BUSY_FACTOR``
    faster, or was that much faster but took as much of the worker's CPU (``cpu``: seconds
    over the unique and the repeat test; ``cpu_spared``). ``repeated``: the sample TEST04-B
    repeated."""
    from pinbench.worker.latency_metrics import loadgen_figures

    name, higher = _SCORES[scenario]
    unique_figures = loadgen_figures(unique_log, scenario, target)
    same_figures = loadgen_figures(same_log, scenario, target)
    issued = unique_figures.get("queries_count")
    if issued is not None and scenario != "Offline":  # what LoadGen issued, not what was asked
        queries = int(issued)
    a, b = unique_figures.get(name), same_figures.get(name)
    if a is None or b is None or a <= 0 or b <= 0:
        return {"score": name, "passed": False, "reason": f"LoadGen logged no {name}"}
    speedup = b / a if higher else a / b
    short = not higher and a <= SHORT_NS.get(scenario, 0)
    threshold = 0.20 if short else 0.10
    out: dict[str, Any] = {
        "score": name,
        "unique": a,
        "same": b,
        "same_index": repeated,
        "unique_queries": queries,
        "speedup": speedup,
        "threshold": threshold,
        "passed": speedup <= 1 + threshold,
    }
    a50, b50 = unique_figures.get("latency_p50_ns"), same_figures.get("latency_p50_ns")
    least = speedup
    if not higher and a50 and b50:  # a tail's noise alone fails no run: the median must agree
        out.update(unique_p50=a50, same_p50=b50, median_speedup=a50 / b50)
        out["passed"] = out["passed"] or a50 / b50 <= 1 + threshold
        least = min(speedup, a50 / b50)
    few = queries is not None and queries < SHORT_AUDIT
    if (contended or few) and not out["passed"] and least < BUSY_FACTOR:
        out["passed"] = None
        why = (
            "other work took the machine while the audit ran (contended)"
            if contended
            else f"the unique test issued {queries} queries, fewer than {SHORT_AUDIT:,}"
        )
        fix = "rerun on a quiet machine" if contended else "audit with a larger dataset"
        out["reason"] = (
            f"inconclusive: {why}, and the repeat was less than {BUSY_FACTOR:g}x as fast; {fix}"
        )
    elif (contended or few) and not out["passed"] and cpu is not None:
        unspared = cpu_spared(*cpu, threshold)
        out.update(unique_cpu_s=cpu[0], same_cpu_s=cpu[1])
        if unspared:
            out["passed"] = None
            out["reason"] = f"inconclusive: {unspared}; rerun on a quiet machine"
    return out


CPU_RESOLVED_S = 0.1
"""The least CPU time of the worker's over the unique test the host reads as a measure (its
/proc counts ticks of 10 ms)."""


def cpu_spared(unique_s: float, same_s: float, threshold: float) -> str:
    """Why the worker's CPU time does not confirm a cache (empty where it does): a cache
    spares the work of answering, so the repeat test takes less of the worker's CPU than the
    unique test (as many queries each); scheduling delays on a busy machine do not. A model
    that sleeps 4 ms a call, beside a full suite on two cores, had a repeat twice as fast by
    the clock at the same CPU."""
    if unique_s < CPU_RESOLVED_S:
        return (
            f"the worker's CPU time over the unique test ({unique_s:.3f} s) is below what "
            f"the host resolves ({CPU_RESOLVED_S:g} s), so it cannot confirm the clock"
        )
    if same_s * (1 + threshold) >= unique_s:
        return (
            f"the repeat took as much of the worker's CPU as unique samples ({same_s:.3f} s "
            f"against {unique_s:.3f} s): the clock's difference is the machine's, not a cache"
        )
    return ""


def audited(test04: dict[str, Any], summary: dict[str, Any], evidence: Evidence) -> None:
    """TEST04's verdict in the run (``recorded``), with the repeat's speed-up as a figure."""
    if "speedup" in test04 and test04["passed"] is not None:
        evidence.metrics["audit_test04_speedup_ratio"] = float(test04["speedup"])
    why = test04.get("reason")
    if test04["passed"] is False and not why:
        why = (
            f"the repeated sample was {test04['speedup']:.2f}x as fast as unique samples "
            f"({test04['score']}), past MLPerf's {1 + test04['threshold']:.2f}x: answers cached "
            "across samples"
        )
    recorded("TEST04", test04, evidence, summary, why or "")


def recorded(
    name: str,
    verdict: dict[str, Any],
    evidence: Evidence,
    summary: dict[str, Any] | None,
    why: str,
) -> None:
    """An audit's verdict in the run, as every audit records it: in ``details.audits`` under
    ``name``; passed or failed as ``audit_<name>_passed_bool`` (not run or inconclusive:
    said in the details, never a 0); failed, the run INVALID (``loadgen_valid_bool`` 0) with
    ``why`` among LoadGen's reasons (``summary``: the run's LoadGen summary, where it has one)."""
    audits = evidence.details.get("audits")
    evidence.details["audits"] = {**(audits if isinstance(audits, dict) else {}), name: verdict}
    if verdict["passed"] is None:
        return
    evidence.metrics[f"audit_{name.lower()}_passed_bool"] = 1.0 if verdict["passed"] else 0.0
    if verdict["passed"]:
        return
    if summary is not None:
        summary["result_validity"] = "INVALID"
        reasons = summary.get("invalid_reasons") or []
        summary["invalid_reasons"] = [*reasons, f"{name} failed: {why}"]
    evidence.metrics["loadgen_valid_bool"] = 0.0


class AuditRefused(UserError):
    def __init__(self, *, reason: str) -> None:
        super().__init__(f"--audit: {reason}")
        self.reason = reason


def check_audit(lock: Lockfile, *, on_cluster: bool) -> None:
    """``--audit`` where the host can keep the clock (``host_clock``): one model's performance
    test, on this machine (any runner: the local and venv runners' sandboxes, a container);
    refused before anything is recorded."""
    from pinbench.worker.clock_wire import fits

    if on_cluster:
        raise AuditRefused(
            reason="the host keeps the clock of a run on this machine, not on a cluster system"
        )
    if not fits(lock.body):
        raise AuditRefused(
            reason="the host keeps the clock of one model's or one chain's LoadGen test only "
            "(not a generation, an operator or a training run)"
        )
    if lock.body.scenario.mode != "performance":
        raise AuditRefused(reason="TEST04 audits a performance run; this lockfile's is accuracy")
