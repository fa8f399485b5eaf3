"""The timed loop: warm-up calls, then one ``perf_counter_ns`` pair around each call.

Nothing but the call (and the framework's sync hook, where calls return before the work is
done) is inside a sample: no allocation, no conversion, no Python bookkeeping beyond storing
two ints. The previous call's result is released before the clock starts: kept alive, its
memory could not be reused by the next call (a fresh allocation, page faults) and its
deallocation would fall inside the next sample; that cost PyTorch 2-5% on a 512x512 matmul
(bench/bench_ops.py, docs/benchmarks.md section 11). Samples are kept raw, as int64
nanoseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError


class BadLoop(UserError):
    def __init__(self, *, field: str, value: int, limit: str) -> None:
        super().__init__(f"{field} = {value} is not allowed: {limit}")
        self.field = field
        self.value = value
        self.limit = limit


MAX_SAMPLES = 1_000_000


@dataclass(frozen=True, slots=True)
class Timed:
    """``latencies_ns``: one int64 per sample, in order; ``last``: the last sample's result
    (what validation checks, so the validated output is one that was timed)."""

    latencies_ns: npt.NDArray[np.int64]
    last: Any


def check_loop(samples: int, warmup: int, threads: int | None = None) -> None:
    if threads is not None and not 1 <= threads <= 1024:
        raise BadLoop(field="threads", value=threads, limit="between 1 and 1024, or unset")
    if not 1 <= samples <= MAX_SAMPLES:
        raise BadLoop(field="samples", value=samples, limit=f"between 1 and {MAX_SAMPLES:,}")
    if not 0 <= warmup <= MAX_SAMPLES:
        raise BadLoop(field="warmup", value=warmup, limit=f"between 0 and {MAX_SAMPLES:,}")


def time_calls(
    call: Callable[[], Any],
    *,
    samples: int,
    warmup: int,
    sync: Callable[[Any], None] | None = None,
) -> Timed:
    """Run ``call`` ``warmup`` times untimed, then ``samples`` times timed."""
    check_loop(samples, warmup)
    for _ in range(warmup):
        result = call()
        if sync is not None:
            sync(result)
    latencies = np.empty(samples, dtype=np.int64)
    clock = time.perf_counter_ns
    result = None
    if sync is None:
        for i in range(samples):
            result = None  # free the previous result here, not inside the next sample
            start = clock()
            result = call()
            latencies[i] = clock() - start
    else:
        for i in range(samples):
            result = None
            start = clock()
            result = call()
            sync(result)
            latencies[i] = clock() - start
    return Timed(latencies_ns=latencies, last=result)
