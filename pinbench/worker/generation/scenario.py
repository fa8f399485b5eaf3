"""LoadGen with token latencies (``use_token_latencies``): one prompt per query, answered
alone or, in Offline with a batch size above 1, in batches of the queries issued together.

Per query the SUT calls ``FirstTokenComplete`` as soon as the first token is chosen and
``QuerySamplesComplete`` with the answer's token count at the end, so LoadGen's own result
has TTFT and TPOT (``(latency - TTFT) / (tokens - 1)``) and, in the Server scenario, judges
them against ``ttft_latency`` / ``tpot_latency``. pinbench keeps its own raw times: each
query's time to first token and whole time, the model's work only (the two LoadGen calls are
taken out), and its token count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt

from pinbench.registry.generation import GenerationSpec
from pinbench.registry.request import Scenario
from pinbench.worker.contention import Activity
from pinbench.worker.latency_metrics import loadgen_figures, series
from pinbench.worker.loadgen_test import metered_test
from pinbench.worker.scenarios import ScenarioError, Tested, settings_for
from pinbench.worker.stop import Stop

Generate = Callable[[int, Callable[[], None]], list[int]]
"""``generate(sample index, first)``: the answer's token ids, ``first()`` at the first one."""
Done = Callable[[int, list[int]], None]
"""``done(row, token ids)``: a batch's row has its whole answer."""
GenerateBatch = Callable[[list[int], Callable[[], None], Done], None]
"""``generate_batch(sample indexes, first, done)``: answers a batch together; ``first()`` once
the first token of every row is chosen, ``done`` for each row as its answer ends."""


@dataclass
class TokenMeasurement(Tested):
    latencies_ns: npt.NDArray[np.int64]
    """Each query's whole time (prefill and every step), in issue order."""
    ttft_ns: npt.NDArray[np.int64]
    """Each query's time to its first token."""
    tokens: npt.NDArray[np.int64]
    """Each query's answer length in tokens."""
    starts_ns: npt.NDArray[np.int64]
    duration_ns: int
    loadgen: dict[str, Any]
    scenario: str
    target: float
    """The scenario's target percentile as a fraction."""
    answers: dict[int, list[int]] = field(default_factory=dict)
    """Accuracy mode: each sample's answer (token ids)."""
    machine: Activity | str = "not read"
    performance: bool = True
    batches: list[list[int]] = field(default_factory=list)
    """Accuracy mode, batch size above 1: the sample indexes answered together, batch by
    batch (padding shifts the arithmetic, so which prompts shared a batch is part of how an
    answer came about)."""

    def summary(self) -> dict[str, float]:
        """LoadGen's ``latency_*``, ``ttft_*`` and ``tpot_*`` (its summary's), then pinbench's
        own ``framework_*`` series of the model's work (``token_metrics``)."""
        out = loadgen_figures(self.loadgen, self.scenario, self.target)
        out.update(token_metrics(self.latencies_ns, self.ttft_ns, self.tokens, self.duration_ns))
        out.update(self.machine_figures())
        return out


def token_metrics(
    latencies: npt.NDArray[np.int64],
    ttft: npt.NDArray[np.int64],
    tokens: npt.NDArray[np.int64],
    duration_ns: int,
) -> dict[str, float]:
    """pinbench's metrics from the raw per-query arrays (the model's work only), by LoadGen's
    percentile rule: ``framework_latency_*``, ``framework_ttft_*`` and ``framework_tpot_*``
    (TPOT over the queries of two tokens or more: ``(latency - TTFT) / (tokens - 1)``,
    LoadGen's definition), calls, tokens per sample, samples/s and tokens/s over the run."""
    out: dict[str, float] = {}
    out.update(series(latencies, "framework_latency"))
    out.update(series(ttft, "framework_ttft"))
    many = tokens > 1
    if many.any():
        lat = latencies.astype(np.float64)
        tpot = (lat[many] - ttft[many].astype(np.float64)) / (tokens[many] - 1)
        out.update(series(tpot, "framework_tpot"))
    out["framework_calls_count"] = float(latencies.size)
    out["samples_count"] = float(latencies.size)
    out["tokens_count"] = float(tokens.sum())
    out["tokens_per_sample_mean_count"] = float(tokens.mean())
    if duration_ns > 0:
        out["framework_throughput_sps"] = latencies.size / (duration_ns / 1e9)
        out["framework_throughput_tps"] = float(tokens.sum()) / (duration_ns / 1e9)
    return out


def token_settings(
    scenario: Scenario, spec: GenerationSpec, *, expected_latency_ns: int, batch_size: int = 1
) -> Any:
    settings = settings_for(
        scenario, expected_latency_ns=expected_latency_ns, batch_size=batch_size
    )
    settings.use_token_latencies = True
    ttft, tpot = spec.latency_bounds()
    if scenario.name == "Server":
        if ttft is not None:
            settings.ttft_latency = int(ttft * 1e6)
        if tpot is not None:
            settings.tpot_latency = int(tpot * 1e6)
    return settings


class _Query:
    """One query's first token: when it came, and the time LoadGen's call took (which the
    query's whole time leaves out).

    LoadGen must hear of a query's first token from the thread that completes the query (the
    thread it issued it on): each thread's calls go through a log of their own, so a first token
    told from another thread is matched against its completion in no set order. In a
    performance test its TTFT then read 1.8e17 ns; in an accuracy test LoadGen's log thread
    read a first token's data after the completion had freed it (a crash). An engine that
    chooses its tokens on a thread of its own hands the first one back
    (``ov_generator``); ``first`` from another thread is refused."""

    __slots__ = ("at", "id", "thread", "told", "told_ns")

    def __init__(self, query_id: int) -> None:
        self.id = query_id
        self.at = 0
        self.told = False
        self.told_ns = 0
        self.thread = threading.get_ident()

    def first(self) -> None:
        if threading.get_ident() != self.thread:
            raise RuntimeError(
                "a generator told its first token from another thread than the query's: "
                "LoadGen hears of it from the issuing thread only"
            )
        self.at = time.perf_counter_ns()
        lg.FirstTokenComplete([lg.QuerySampleResponse(self.id, 0, 0)])
        self.told = True
        self.told_ns = time.perf_counter_ns() - self.at


def run_token_scenario(
    generate: Generate,
    count: int,
    scenario: Scenario,
    spec: GenerationSpec,
    *,
    expected_latency_ns: int,
    log_dir: Path,
    stop: Stop,
    batch_size: int = 1,
    generate_batch: GenerateBatch | None = None,
) -> TokenMeasurement:
    """Batch size 1: each query answered alone by ``generate``. Larger (Offline): the queries
    LoadGen issues together are answered ``batch_size`` at a time by ``generate_batch``, every
    row's time counted from the batch's start: its TTFT is the batch's prefill, its latency ends
    when its own answer does (rows that end early are completed then, not at the batch's end).
    """
    if count == 0:
        raise ScenarioError(setting="sample_count", reason="the dataset has no prompts")
    accuracy = scenario.mode == "accuracy"
    latencies: list[int] = []
    firsts: list[int] = []
    counts: list[int] = []
    starts: list[int] = []
    answers: dict[int, list[int]] = {}
    batches: list[list[int]] = []
    failure: list[BaseException] = []
    span = [0, 0]
    clock = time.perf_counter_ns
    response = lg.QuerySampleResponse

    def issue(queries: list[Any]) -> None:
        for q in queries:
            n = 1
            query = _Query(q.id)
            try:
                if not span[0]:
                    span[0] = clock()
                if not failure and not stop.is_set():
                    t0 = clock()
                    tokens = generate(q.index, query.first)
                    t1 = clock()
                    n = len(tokens)
                    latencies.append(t1 - t0 - query.told_ns)
                    firsts.append(query.at - t0)
                    counts.append(n)
                    starts.append(t0)
                    if accuracy:
                        answers[q.index] = tokens
                    span[1] = t1
            except BaseException as exc:  # handed back after LoadGen returns
                failure.append(exc)
            if not query.told:
                lg.FirstTokenComplete([response(q.id, 0, 0)])
            lg.QuerySamplesComplete([response(q.id, 0, 0, max(1, n))])

    def issue_batched(queries: list[Any]) -> None:
        assert generate_batch is not None
        for start in range(0, len(queries), batch_size):
            chunk = queries[start : start + batch_size]
            batch = _Batch(chunk, accuracy)
            try:
                if not span[0]:
                    span[0] = clock()
                if not failure and not stop.is_set():
                    batch.t0 = clock()
                    generate_batch([q.index for q in chunk], batch.first, batch.done)
                    if len(batch.ended) != len(chunk):
                        raise RuntimeError(
                            f"the generator ended {len(batch.ended)} of the batch's "
                            f"{len(chunk)} answers"
                        )
                    latencies.extend(batch.latencies)
                    firsts.extend([batch.at - batch.t0] * len(batch.latencies))
                    counts.extend(batch.counts)
                    starts.extend([batch.t0] * len(batch.latencies))
                    answers.update(batch.answers)
                    if accuracy:
                        batches.append([q.index for q in chunk])
                    span[1] = batch.last
            except BaseException as exc:  # handed back after LoadGen returns
                failure.append(exc)
            batch.finish()

    settings = token_settings(
        scenario, spec, expected_latency_ns=expected_latency_ns, batch_size=batch_size
    )
    chosen = issue if batch_size == 1 else issue_batched
    summary, activity = metered_test(chosen, count, settings, log_dir, stop)
    if failure:
        raise failure[0]
    return TokenMeasurement(
        latencies_ns=np.asarray(latencies, dtype=np.int64),
        ttft_ns=np.asarray(firsts, dtype=np.int64),
        tokens=np.asarray(counts, dtype=np.int64),
        starts_ns=np.asarray(starts, dtype=np.int64),
        duration_ns=span[1] - span[0],
        loadgen=summary,
        scenario=scenario.name,
        target=scenario.percentile / 100.0,
        answers=answers,
        batches=batches,
        machine=activity,
        performance=scenario.mode == "performance",
    )


class _Batch:
    """One batch's queries: the first-token call for all of them at once, each row completed
    as its answer ends; the time LoadGen's calls take is left out of the rows still going."""

    def __init__(self, queries: list[Any], keep: bool) -> None:
        self.queries = queries
        self.keep = keep
        self.t0 = 0
        self.at = 0
        self.last = 0
        self.told = False
        self.told_ns = 0
        self.ended: set[int] = set()
        self.latencies: list[int] = []
        self.counts: list[int] = []
        self.answers: dict[int, list[int]] = {}

    def first(self) -> None:
        self.at = time.perf_counter_ns()
        lg.FirstTokenComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in self.queries])
        self.told = True
        self.told_ns += time.perf_counter_ns() - self.at

    def done(self, row: int, tokens: list[int]) -> None:
        at = time.perf_counter_ns()
        if row in self.ended or not tokens or not self.told:
            raise RuntimeError(f"the generator ended row {row} twice, empty or before its first")
        query = self.queries[row]
        self.latencies.append(at - self.t0 - self.told_ns)
        self.counts.append(len(tokens))
        if self.keep:
            self.answers[query.index] = tokens
        self.ended.add(row)
        self.last = at
        lg.QuerySamplesComplete([lg.QuerySampleResponse(query.id, 0, 0, len(tokens))])
        self.told_ns += time.perf_counter_ns() - at

    def finish(self) -> None:
        """After a failure or a stop: every query LoadGen is still owed, answered empty."""
        response = lg.QuerySampleResponse
        if not self.told:
            lg.FirstTokenComplete([response(q.id, 0, 0) for q in self.queries])
        rest = [response(q.id, 0, 0, 1) for r, q in enumerate(self.queries) if r not in self.ended]
        if rest:
            lg.QuerySamplesComplete(rest)
