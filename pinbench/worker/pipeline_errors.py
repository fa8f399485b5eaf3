"""What the pipeline refuses, the array types its steps take, and how an array of samples
ends (the input's element type, contiguous)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.ports import Input

FloatArray = npt.NDArray[np.floating]
Array = npt.NDArray[np.generic]


class PipelineError(UserError):
    def __init__(self, *, step: str, reason: str) -> None:
        super().__init__(f"preprocessing step {step}: {reason}")
        self.step = step
        self.reason = reason


class InputShape(PipelineError):
    """Samples of a shape the input does not read as it is declared: names the input and
    what of its declaration (a step, its type) needs another shape; ``step`` is that step's
    name, or empty."""

    def __init__(self, *, input: str, step: str, reason: str) -> None:
        UserError.__init__(self, f"input {input!r}: {reason}")
        self.input = input
        self.step = step
        self.reason = reason


def _finish(x: Array, spec: Input) -> Array:
    if x.dtype != np.dtype(spec.element_type):
        x = x.astype(spec.element_type)
    return np.ascontiguousarray(x)
