"""The predictor interface. Timed regions contain ``predict`` and nothing else."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.evaluator.predictors.config import ModelFiles, PredictorOptions

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

    def check_input(self, batch: Array) -> None:
        """Raise ``InputMismatch`` if the batch's shape or dtype cannot be fed to the model.

        This default tries one prediction and reports the framework's complaint; predictors
        that know their input signature override it with a precise check.
        """
        try:
            self.predict(batch)
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
