"""What every framework module provides, as module-level functions and one trainer object.

* ``NAME``: the framework's name as the CLI and the results spell it.
* ``WEIGHTS_FORMAT``: the format of the weights ``Trainer.weights`` returns.
* ``version()``: the installed framework's version (imports it).
* ``session(spec, model, threads=...)``: a context manager that applies the spec's
  determinism switches and seed, builds the model (fresh from the seed or from the artifact's
  weights) and its optimizer, yields a ``Trainer``, and restores what it can on exit.

The loop (``run.train``) is the framework's caller, never the other way round: data order,
timing, NaN checks and evaluation batches are the same for every framework.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np
import numpy.typing as npt

from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainModel


class Trainer(Protocol):
    def bind(self, sample: npt.NDArray[np.float32]) -> int:
        """Run the model once on ``sample`` (a batch of one, untimed) and return its number
        of output classes; ``InvalidData`` if inputs of that shape do not fit it."""
        ...

    def step(self, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> float:
        """One optimizer step on a mini-batch; its mean cross-entropy before the update."""
        ...

    def evaluate(self, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> tuple[float, int]:
        """Summed cross-entropy and correct top-1 count of a batch, in inference mode."""
        ...

    def weights(self) -> bytes:
        """The current weights as a file's bytes: equal weights give equal bytes."""
        ...


class TrainingFramework(Protocol):
    NAME: str
    WEIGHTS_FORMAT: str

    def version(self) -> str: ...

    def session(
        self, spec: TrainingSpec, model: TrainModel, *, threads: int | None = None
    ) -> AbstractContextManager[Trainer]: ...
