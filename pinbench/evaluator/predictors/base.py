"""The predictor interface. Timed regions contain ``predict`` and nothing else."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.evaluator.predictors.config import ModelFiles, PredictorOptions
from pinbench.trace.events import FrameworkTrace
from pinbench.trace.levels import TraceUnsupported, offers

Array = npt.NDArray[np.generic]


class ModelLoadError(UserError):
    def __init__(self, *, model: str, reason: str) -> None:
        super().__init__(f"cannot load model {model}: {reason}")
        self.model = model
        self.reason = reason


class DeviceUnavailable(UserError):
    def __init__(self, *, framework: str, device: str, available: list[str]) -> None:
        super().__init__(
            f"{framework} cannot run on {device} here; available: {', '.join(available)}"
        )
        self.framework = framework
        self.device = device
        self.available = available


class InputMismatch(UserError):
    def __init__(self, *, name: str, expected: str, actual: str) -> None:
        super().__init__(f"input {name!r}: the model expects {expected}, got {actual}")
        self.name = name
        self.expected = expected
        self.actual = actual


def check_signature(batch: Array, *, name: str, dtype: np.dtype[Any], shape: list[Any]) -> None:
    """Raise ``InputMismatch`` unless ``batch`` has ``dtype``, the rank of ``shape`` and its size
    on every axis ``shape`` gives as an int (``None`` or a symbol such as ``"N"`` fits any)."""
    fits = batch.dtype == dtype and batch.ndim == len(shape)
    if fits:
        fits = all(
            not isinstance(want, int) or want == got
            for want, got in zip(shape, batch.shape, strict=True)
        )
    if not fits:
        raise InputMismatch(
            name=name,
            expected=f"{dtype.name} {shape}",
            actual=f"{batch.dtype.name} {list(batch.shape)}",
        )


class Predictor(ABC):
    """``open(model, options)`` once, ``predict(batch)`` many times, ``close()`` once."""

    NAME: ClassVar[str]
    TITLE: ClassVar[str]
    """The framework's name for people (``PyTorch``)."""
    FORMATS: ClassVar[tuple[str, ...]]

    @classmethod
    @abstractmethod
    def framework_version(cls) -> str:
        """The version of the framework this process actually imported."""

    def check_format(self, model: ModelFiles) -> None:
        """Raise ``ModelLoadError`` if this framework does not load ``model``'s format."""
        if model.format not in self.FORMATS:
            raise ModelLoadError(
                model=model.format, reason=f"{self.TITLE} loads {', '.join(self.FORMATS)} only"
            )

    @abstractmethod
    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        """Load the model; raise ``ModelLoadError`` / ``DeviceUnavailable`` with the reason."""

    def check_input(self, batch: Array) -> None:  # noqa: B027 - optional hook
        """Raise ``InputMismatch`` if the batch's shape or dtype cannot be fed to the model.

        Predictors that know their input signature override this with a precise check; for
        the others ``first_predict`` reports the framework's own complaint.
        """

    def first_predict(self, batch: Array) -> Array:
        """The first (cold) prediction; a failure is the framework's complaint about the input."""
        try:
            return self.predict(batch)
        except Exception as exc:  # the framework's own error types
            raise InputMismatch(
                name="input",
                expected=f"what the model accepts ({type(exc).__name__}: {exc})".strip(),
                actual=f"{batch.dtype.name} {list(batch.shape)}",
            ) from None

    @abstractmethod
    def predict(self, batch: Array) -> Array:
        """Run the model on one batch; return its first output."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model."""

    PROFILES_ONE_THREAD: ClassVar[bool] = False
    """The framework's profiler records only the thread that started it: while it runs,
    predictions are made on that thread (``run_scenario(on_caller=True)``)."""

    def start_profiling(self, scratch: Path) -> None:
        """Start the framework's own operator profiler, before ``open`` (so loading is
        profiled too) and outside any timed region; ``scratch`` is a writable folder."""
        raise TraceUnsupported(
            framework=self.NAME,
            level="framework",
            offers=offers(self.NAME),
            reason="its predictor reads no operator profiler",
        )

    def stop_profiling(self) -> FrameworkTrace:
        """Stop the profiler and return its events on the framework's clock."""
        raise NotImplementedError
