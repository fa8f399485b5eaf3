"""``postprocess`` on a run's raw outputs, outside every timed region of the framework: the
first prediction's outputs checked before anything is timed, then every sample's answer, each
call timed apart (``perf_counter_ns`` around the call alone), recorded as the
``postprocess_latency_*_ns`` series (LoadGen's percentile rule, ``latency_metrics.series``)
with its raw values kept."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.processing.checks import Signature, check_outputs
from pinbench.processing.loading import Loaded
from pinbench.registry.ports import Output
from pinbench.worker.stop import Stop

Array = npt.NDArray[np.generic]
Answer = dict[str, Array]


class Post:
    """One run's ``postprocess``: ``first`` before timing, ``every`` after the scenario."""

    def __init__(self, code: Loaded, declared: Sequence[Output], files: Mapping[str, Path]):
        self.code = code
        self.declared = list(declared)
        self.files = files
        self.signature: Signature | None = None

    def first(self, raw: Answer, batch: int) -> Answer:
        """The first (cold) prediction's outputs post-processed and checked: a wrong
        declaration fails here, before anything is timed."""
        got = self.code.call(raw, self.files, sample="#0 (the first prediction)")
        out, self.signature = check_outputs(got, self.declared, self.code.where, batch=batch)
        return out

    def every(
        self, answers: dict[int, Answer], stop: Stop
    ) -> tuple[dict[int, Answer], npt.NDArray[np.int64]]:
        """Each sample's raw outputs (batch axis of one) post-processed, in sample order; and
        each call's time in nanoseconds."""
        out: dict[int, Answer] = {}
        times: list[int] = []
        clock = time.perf_counter_ns
        call = self.code.function
        for index in sorted(answers):
            stop.check()
            raw = answers[index]
            t0 = clock()
            try:
                got = call(raw, self.files)
            except Exception as exc:  # the publisher's code: any exception is its failure
                raise self.code.failure(exc, f"#{index}") from None
            times.append(clock() - t0)
            out[index], _ = check_outputs(
                got,
                self.declared,
                self.code.where,
                batch=1,
                first=self.signature,
                on=f"for sample #{index}",
            )
        return out, np.asarray(times, dtype=np.int64)
