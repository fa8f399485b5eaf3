"""The steps every evaluation shares, a model's (``measure``) and a chain's
(``chains.evaluate``): the first answer checked, the warm-up, what is recorded of the feed,
and an accuracy run's answers kept for the host to score."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.tasks.registry import task
from pinbench.tasks.shapes import check_batch_axis
from pinbench.worker.job import Evidence
from pinbench.worker.output_axes import reorder
from pinbench.worker.stop import Stop


def check_first(
    scorer: Any, answer: Any, arrays: Any, batch: int, outputs: Any, accuracy: bool
) -> None:
    """The first answer checked before anything is timed, in every mode: by the task's scorer
    (a declared output is honoured or refused), or, where the scorer needs the ground truth the
    host holds (``truth_withheld``: the host checks the rest as it scores), each declared
    output's batch axis."""
    if scorer is not None:
        scorer.check(answer, {k: v[:batch] for k, v in arrays.items()}, batch)
    elif accuracy:
        check_batch_axis(answer, [str(o.name) for o in outputs], batch)


def keep_answers(
    evidence: Evidence, task_name: str, outputs: dict[int, Any], transposed: Any, arrays: Any
) -> None:
    """An accuracy run's answers for the host to score (``Evidence.answers``): every sample's
    outputs as the scorer reads them (a transpose step's applied), with the model's inputs for
    a task that reads them as it scores."""
    evidence.answers = {i: reorder(a, transposed) for i, a in outputs.items()}
    if task(task_name).scores_inputs:
        evidence.scored_inputs = dict(arrays)


def feed_details(feed: Any, body: Any, scenario: Any) -> dict[str, Any]:
    """What every evaluation records of its prepared inputs and settings (one model's run and
    a chain's)."""
    return {
        "pipeline_digest": feed.digest.hex,
        "preprocess_cache_hit": feed.cached,
        "batch_size": body.batch_size,
        "threads": body.threads,
        "scenario": scenario.name,
        "mode": scenario.mode,
    }


WARMUP_MIN_NS = 500_000_000
"""Warm up for at least half a second: a cold core (frequency, caches) made the first run in
a process up to 1.6x slower than the next ones on the digits model."""
WARMUP_MAX_CALLS = 100_000


def warm_up(
    predict: Callable[[Any], Any], batch: npt.NDArray[np.generic], count: int, stop: Stop
) -> tuple[int, list[int], list[int]]:
    """Untimed predictions (at least ``count`` and half a second); return the median time of
    the last ``count`` as LoadGen's expected latency, and each call's start and time."""
    starts: list[int] = []
    times: list[int] = []
    start = time.perf_counter_ns()
    while not stop.is_set() and (
        len(times) < max(1, count)
        or (time.perf_counter_ns() - start < WARMUP_MIN_NS and len(times) < WARMUP_MAX_CALLS)
    ):
        t0 = time.perf_counter_ns()
        predict(batch)
        times.append(time.perf_counter_ns() - t0)
        starts.append(t0)
    stop.check()  # stopped during the warm-up
    return int(np.median(times[-max(1, count) :])), starts, times
