"""MLPerf's TEST04 audit, run by the host after a host-timed performance test (issue 71, item 3;
issue 84, item 2; decisions 293 and 309): does the system under test answer a sample it has
seen before faster than one it has not (a cache of answers across samples)?

As MLPerf's TEST04 since v1.0 (``performance_issue_unique``, compared with the performance run),
and as its TEST04-A met a freshly started system: once the run's own test has ended, a new
worker, started afresh for the same lockfile in performance mode (its job the timed worker's,
byte for byte), answers every sample exactly once on the host's clock (``unique``), in the
scenario and at the rate of the run's test. The run's test may be at most ``threshold`` faster
than that: 10%, 20% where the unique test's latency is short (SingleStream ≤ 200 µs,
MultiStream ≤ 1.6 ms), as verify_performance.py allows.

Nothing a worker can read tells it when to stop caching: the run's test comes first, with no
audit before it to count repeats in, and the audit's worker has seen no sample (a cache that
waits for the audits to end never serves the test). Each scenario is compared where a cache
shows (``_COMPARED``):

- SingleStream, MultiStream and Server by latency: the scenario's percentile (p90, p99, p99)
  and the median, the larger speed-up judged. A short test's tail is a miss where a quarter
  of its queries are first sights of a sample; its median is not. (Not the mean: one stall of
  10 ms among a thousand honest queries of 10 µs doubles it.) Server's
  score, completed samples per second, is pinned near its target whatever the latency, and is
  not compared (a cache there was 1.0006x as fast by it, 3.7x by the median).
- Offline by time per sample (LoadGen's samples per second), and by the worker's CPU time per
  sample where the host resolves it (``cpu_spared``): one query's total is not a rate (the
  run's test issued 100 times the unique test's samples and took more CPU in all while a cache
  answered it 155x as fast).

On a busy machine or in a short audit, a test faster by the clock must also have taken less
of the worker's CPU per sample (``cpu_spared``, read by the host from /proc): a cache spares
work; a machine's scheduling delays do not (decision 296).

A failed audit makes the run INVALID (``loadgen_valid_bool`` 0, its reason with LoadGen's in
``details.loadgen.invalid_reasons``): its figures are never a baseline (``series.gate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile
    from pinbench.worker.job import Evidence

_COMPARED = {
    "SingleStream": ("latency_p90_ns", "latency_p50_ns"),
    "MultiStream": ("latency_p99_ns", "latency_p50_ns"),
    "Server": ("latency_p99_ns", "latency_p50_ns"),
    "Offline": ("throughput_sps",),
}
"""What each scenario's audit compares, the scenario's score first; Offline's is a rate (higher
is faster), the others' latencies (lower is faster)."""

SHORT_NS = {"SingleStream": 200_000, "MultiStream": 1_600_000}
"""Below these latencies MLPerf's threshold is 20%, not 10% (run-to-run noise)."""


def unique(settings: Any, count: int | None = None, per_query: int = 1) -> Any:
    """TEST04's unique test: every sample issued once. Given the dataset's ``count`` of
    samples, where the score is a latency or a rate of queries, in exactly as many queries as
    they fill (each of ``per_query`` samples): the test's duration does not end it with samples
    never issued (a model of 4.5 ms a sample had 242 of its 450 issued in a second). Offline's
    one query LoadGen fills with every sample once, whatever its expected rate."""
    settings.performance_issue_unique = True
    settings.performance_issue_same = False
    if count is not None and settings.scenario != _offline():
        queries = max(1, count // max(1, per_query))
        settings.min_duration_ms = 0
        settings.min_query_count = queries
        settings.max_query_count = queries
    return settings


def _offline() -> Any:
    import mlperf_loadgen as lg

    return lg.TestScenario.Offline


BUSY_FACTOR = 2.0
"""On a busy machine (``contended``), or in a short audit (``SHORT_AUDIT``), a test at least
this much faster still fails: a cache answers orders of magnitude faster; the noise of short
tests, or of tests beside other work, does not."""

SHORT_AUDIT = 1024
"""Fewer unique samples than this (MLPerf's SingleStream minimum query count) make a short
audit: the unique test issues each sample once, so a dataset of 64 samples gives 64 queries,
whose percentiles move by more than MLPerf's threshold from run to run (an honest model of
10 µs a query, audited 7 times across the sandbox's pipe: 0.32x to 1.83x as fast at p90,
0.73x to 1.58x at the median)."""


@dataclass(frozen=True)
class Test:
    """What the host measured of one test for TEST04: LoadGen's summary, the samples its worker
    answered, the worker's CPU seconds over the test, and whether other work took the machine."""

    summary: dict[str, Any]
    samples: int
    cpu_s: float
    contended: bool

    @classmethod
    def of(cls, evidence: Evidence) -> Test:
        """The host's record of a test in a worker's evidence (``HostClock.apply``)."""
        summary = evidence.details.get("loadgen")
        clock = evidence.details.get("clock")
        cpu = clock.get("worker_cpu_s") if isinstance(clock, dict) else None
        return cls(
            summary if isinstance(summary, dict) else {},
            int(evidence.metrics.get("samples_count", 0)),
            float(cpu) if isinstance(cpu, (int, float)) else 0.0,
            evidence.metrics.get("contended_bool") == 1.0,
        )

    def cpu_per_sample(self) -> float | None:
        return self.cpu_s / self.samples if self.samples > 0 else None


def verdict(
    scenario: str, target: float, unique: Test, timed: Test, count: int | None = None
) -> dict[str, Any]:
    """TEST04's verdict from the unique test and the run's own (``timed``): the figures
    compared (``_COMPARED``), the run's speed-up over the unique test by each, the largest
    judged against the threshold, and whether it passed: True, False, or None (inconclusive)
    where either test ran contended, or the unique test answered fewer than ``SHORT_AUDIT``
    samples, and the run's test was less than ``BUSY_FACTOR`` faster, or was that much faster
    but took as much of the worker's CPU per sample (``cpu_spared``); so too Offline's on a
    quiet machine where the CPU is resolved and was not spared. ``count``: the samples the
    unique test was to answer (the dataset's)."""
    from pinbench.worker.latency_metrics import loadgen_figures

    names = _COMPARED[scenario]
    higher = scenario == "Offline"
    u = loadgen_figures(unique.summary, scenario, target)
    t = loadgen_figures(timed.summary, scenario, target)
    score = names[0]
    out: dict[str, Any] = {"score": score, "unique_samples": unique.samples, "of": count}
    speedups: dict[str, float] = {}
    for name in names:
        a, b = u.get(name), t.get(name)
        if a is None or b is None or a <= 0 or b <= 0:
            if name == score:
                return {**out, "passed": False, "reason": f"LoadGen logged no {name}"}
            continue
        tag = "" if name == score else "_" + name.split("_")[1]
        out[f"unique{tag}"], out[f"timed{tag}"] = a, b
        speedups[name] = b / a if higher else a / b
    judged = max(speedups, key=lambda n: speedups[n])
    speedup = speedups[judged]
    threshold = 0.20 if not higher and out["unique"] <= SHORT_NS.get(scenario, 0) else 0.10
    out.update(speedups=speedups, judged=judged, speedup=speedup, threshold=threshold)
    cu, ct = unique.cpu_per_sample(), timed.cpu_per_sample()
    if cu is not None and ct is not None:
        out.update(unique_cpu_per_sample_s=cu, timed_cpu_per_sample_s=ct)
    out["passed"] = speedup <= 1 + threshold
    if out["passed"]:
        return out
    busy = unique.contended or timed.contended
    few = unique.samples < SHORT_AUDIT
    if (busy or few) and speedup < BUSY_FACTOR:
        why = (
            "other work took the machine while a test ran (contended)"
            if busy
            else f"the unique test answered {unique.samples} samples, fewer than {SHORT_AUDIT:,}"
        )
        fix = "rerun on a quiet machine" if busy else "audit with a larger dataset"
        out["passed"] = None
        out["reason"] = (
            f"inconclusive: {why}, and the run's test was less than {BUSY_FACTOR:g}x as fast; {fix}"
        )
        return out
    if (busy or few or higher) and cu is not None and ct is not None:
        unspared = cpu_spared(unique, timed)
        resolved = unique.cpu_s >= CPU_RESOLVED_S
        if unspared and (busy or few or resolved):  # a quiet Offline's unresolved CPU: the clock
            out["passed"] = None
            out["reason"] = f"inconclusive: {unspared}; rerun on a quiet machine"
    return out


CPU_RESOLVED_S = 0.1
"""The least CPU time of the worker's over the unique test the host reads as a measure (its
/proc counts ticks of 10 ms)."""
CPU_TICKS = 2
"""The ticks of /proc's CPU time each test's reading may be off by (one at its start, one at
its end): a cache's saving must show beyond them."""
CPU_FACTOR = 1.5
"""How much less of the worker's CPU per sample a cached test takes at least, beyond the
ticks' error: a cache spares most of the work (the caching model's test took a quarter of the
unique test's CPU per sample); an honest worker's varies by a fifth beside other work (a
model of 2 ms a sample, beside two busy loops, took 3.1 ms per sample over the unique test and
2.6 ms over the run's)."""


def cpu_spared(unique: Test, timed: Test) -> str:
    """Why the worker's CPU time does not confirm a cache (empty where it does): a cache
    spares the work of answering, so the run's test takes less of the worker's CPU per sample
    than the unique test, by ``CPU_FACTOR`` at least where each reading is taken as favourably
    to the worker as its ticks allow (``CPU_TICKS``); scheduling delays on a busy machine do not
    spare it. A model that sleeps 4 ms a call, beside a full suite on two cores, was twice as
    fast by the clock at the same CPU."""
    import os

    if unique.cpu_s < CPU_RESOLVED_S or unique.samples <= 0 or timed.samples <= 0:
        return (
            f"the worker's CPU time over the unique test ({unique.cpu_s:.3f} s) is below what "
            f"the host resolves ({CPU_RESOLVED_S:g} s), so it cannot confirm the clock"
        )
    if timed.cpu_s < 0 or unique.cpu_s < 0:  # a process of the tree ended unwaited mid-test
        return (
            "the worker's CPU time read lower at a test's end than at its start (a process of "
            "its tree ended unwaited), so it cannot confirm the clock"
        )
    error = CPU_TICKS / os.sysconf("SC_CLK_TCK")
    least = (unique.cpu_s - error) / unique.samples
    most = (timed.cpu_s + error) / timed.samples
    if most * CPU_FACTOR >= least:
        return (
            f"the run's test took about as much of the worker's CPU per sample as unique "
            f"samples ({timed.cpu_s / timed.samples * 1e3:.3f} ms against "
            f"{unique.cpu_s / unique.samples * 1e3:.3f} ms, less than {CPU_FACTOR:g}x apart "
            "beyond /proc's ticks): the clock's difference is the machine's, not a cache"
        )
    return ""


def audited(test04: dict[str, Any], summary: dict[str, Any], evidence: Evidence) -> None:
    """TEST04's verdict in the run (``recorded``), with the run's speed-up as a figure."""
    if "speedup" in test04 and test04["passed"] is not None:
        evidence.metrics["audit_test04_speedup_ratio"] = float(test04["speedup"])
    why = test04.get("reason")
    if test04["passed"] is False and not why:
        why = (
            f"the run's test was {test04['speedup']:.2f}x as fast as a new worker answering "
            f"every sample once ({test04['judged']}), past MLPerf's "
            f"{1 + test04['threshold']:.2f}x: answers cached across samples"
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
