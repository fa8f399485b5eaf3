"""What every framework module provides, as module-level functions.

* ``NAME``: the framework's name as the CLI and the results spell it.
* ``version()``: the installed framework's version (imports it).
* ``supports(spec)``: ``None`` if the framework can run ``spec`` here, else the reason.
* ``prepare(spec, inputs, threads=...)``: every bit of setup (conversion of the inputs to the
  framework's tensors and layout, graph building, tracing, one untimed call) done, returns a
  zero-argument callable that runs the operator once and returns its raw result.
* ``fetch(spec, result)``: that result as float64 NumPy arrays in the spec's layout, one per
  output (forward: ``y``; backward: one gradient per ``OPS[op].grads``), for validation.
* ``sync(result)``: wait until ``result`` is computed (a no-op where calls are synchronous).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from pinbench.operators.inputs import OperatorInputs
from pinbench.specs.operators.spec import OperatorSpec

Fetched = tuple[npt.NDArray[np.float64], ...]


class OperatorFramework(Protocol):
    NAME: str

    def version(self) -> str: ...

    def supports(self, spec: OperatorSpec) -> str | None: ...

    def prepare(
        self, spec: OperatorSpec, inputs: OperatorInputs, *, threads: int | None = None
    ) -> Callable[[], Any]: ...

    def fetch(self, spec: OperatorSpec, result: Any) -> Fetched: ...

    def sync(self, result: Any) -> None: ...
