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

from pinbench.specs.operators.loop import check_loop


@dataclass(frozen=True, slots=True)
class Timed:
    """``latencies_ns``: one int64 per sample, in order; ``last``: the last sample's result
    (what validation checks, so the validated output is one that was timed)."""

    latencies_ns: npt.NDArray[np.int64]
    last: Any


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
