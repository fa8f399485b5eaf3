"""The ``operator`` section of a request and its lockfile: the spec plus the timed loop.

A request with this section benchmarks one operator on one framework (Deep500's level 0)
instead of a model on a dataset; decision 109 says how it is pinned and recorded.
"""

from __future__ import annotations

from pinbench.specs.operators.loop import check_loop
from pinbench.specs.operators.spec import OperatorSpec


class OperatorRun(OperatorSpec, frozen=True, kw_only=True):
    """``op``, ``params``, ``dtype``, ``direction`` and ``seed`` as ``OperatorSpec`` has them,
    plus the loop: ``warmup`` untimed calls, then ``samples`` timed ones (raw latencies kept).
    """

    samples: int = 100
    warmup: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        check_loop(self.samples, self.warmup)

    def spec(self) -> OperatorSpec:
        return OperatorSpec(
            op=self.op,
            params=dict(self.params),
            dtype=self.dtype,
            direction=self.direction,
            seed=self.seed,
        )
