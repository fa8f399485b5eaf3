"""A predictor around another (``stream.Fed``, ``views.Viewed``): it changes what each call
is fed and answers; loading, profiling and closing are the wrapped predictor's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from pinbench.trace.events import FrameworkTrace
from pinbench.worker.predictors.base import Port, Predictor
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions


class Wrapping(Predictor):
    FORMATS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, inner: Predictor) -> None:
        self.inner = inner

    @classmethod
    def framework_version(cls) -> str:
        raise TypeError("ask the wrapped predictor's class")

    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        self.inner.open(model, options)

    def close(self) -> None:
        self.inner.close()

    def start_profiling(self, scratch: Path) -> None:
        self.inner.start_profiling(scratch)

    def stop_profiling(self) -> FrameworkTrace:
        return self.inner.stop_profiling()

    def input_ports(self) -> Sequence[Port]:
        return self.inner.input_ports()
