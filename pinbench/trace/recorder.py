"""The evaluator's side of tracing: phases timed as they happen, the system sampler, and the
finished timeline. At level ``none`` it records nothing and writes no trace."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from pinbench.trace.clock import wall_minus_perf
from pinbench.trace.events import FrameworkTrace
from pinbench.trace.levels import parts
from pinbench.trace.system import Sampler
from pinbench.trace.timeline import Recording, Span, build


class Recorder:
    def __init__(self, level: str, framework: str, framework_version: str) -> None:
        self.parts = parts(level)
        self.recording = Recording(level, framework, framework_version, wall_minus_perf())
        self._sampler = Sampler() if "system" in self.parts else None

    @property
    def tracing(self) -> bool:
        return bool(self.parts)

    def wants(self, part: str) -> bool:
        return part in self.parts

    def start(self) -> None:
        if self._sampler is not None:
            self._sampler.start()

    @contextmanager
    def phase(self, name: str, *, role: str | None = None, **args: Any) -> Iterator[None]:
        """Time a pipeline phase (outside any timed region); ``role`` is ``load`` or ``cold``."""
        t0 = time.perf_counter_ns()
        try:
            yield
        finally:
            span = Span(name, t0, time.perf_counter_ns(), args)
            self.recording.phases.append(span)
            if role == "load":
                self.recording.load = span
            elif role == "cold":
                self.recording.cold = span

    def warm_up(self, starts: list[int], durations: list[int]) -> None:
        self.recording.warm_starts = np.asarray(starts, np.int64)
        self.recording.warm_durations = np.asarray(durations, np.int64)

    def scenario(self, starts: npt.NDArray[np.int64], durations: npt.NDArray[np.int64]) -> None:
        self.recording.starts, self.recording.durations = starts, durations

    def framework(self, trace: FrameworkTrace) -> None:
        self.recording.framework_trace = trace

    def stop(self) -> None:
        """Stop sampling (idempotent; also on failure, so no thread outlives the run)."""
        if self._sampler is not None and self.recording.samples is None:
            self.recording.samples = self._sampler.stop()

    def finish(self) -> bytes | None:
        """The Chrome trace as JSON bytes, or None when not tracing."""
        self.stop()
        if not self.tracing:
            return None
        return msgspec.json.encode(build(self.recording))
