"""A transformation as a request names it: plain data, validated when it is parsed.

The ``transform`` section of a training request (``training.transform``) is pinned in the
lockfile with the rest of the training spec; a bad value is refused while the request is
parsed, so nothing is locked or queued.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from pinbench import bounds as b

GraphLevel = Literal["disabled", "basic", "extended", "all"]
GRAPH_LEVELS: tuple[GraphLevel, ...] = ("disabled", "basic", "extended", "all")


class TransformSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``micro_batches``: each batch split into this many micro-batches (gradients
    accumulated, each micro-batch's mean loss weighted by its share of the batch, so one
    optimizer step sees the full batch's gradient; for inference the outputs concatenated);
    1 is the untransformed execution. ``graph_optimization``: onnxruntime's graph optimization
    level (``SessionOptions.graph_optimization_level``) for an ONNX model; ``disabled`` is the
    untransformed graph. ``steps``: the optimizer steps a training run takes with and without
    the transformation, from the same initial weights on the same batches, before its weights
    are compared."""

    micro_batches: Annotated[int, b.MICRO_BATCHES.meta] = 1
    graph_optimization: GraphLevel | None = None
    steps: Annotated[int, b.TRANSFORM_STEPS.meta] = 3

    def __post_init__(self) -> None:  # msgspec checks the bounds while parsing; this, when built
        _integer("micro_batches", self.micro_batches, b.MICRO_BATCHES)
        _integer("steps", self.steps, b.TRANSFORM_STEPS)
        if self.graph_optimization is not None and self.graph_optimization not in GRAPH_LEVELS:
            raise ValueError(
                f"graph_optimization must be one of {', '.join(GRAPH_LEVELS)}, "
                f"got {self.graph_optimization!r}"
            )

    def label(self) -> str:
        """``micro_batches=4`` / ``graph_optimization=all``: the table's row name."""
        parts = []
        if self.micro_batches != 1 or self.graph_optimization is None:
            parts.append(f"micro_batches={self.micro_batches}")
        if self.graph_optimization is not None:
            parts.append(f"graph_optimization={self.graph_optimization}")
        return ", ".join(parts)

    def check_batch(self, batch_size: int, *, field: str) -> None:
        """``micro_batches`` divides ``batch_size`` (named ``field``): ValueError otherwise."""
        if batch_size % self.micro_batches:
            raise ValueError(
                f"transform.micro_batches {self.micro_batches} does not divide {field} "
                f"{batch_size}: give a divisor of {batch_size} (e.g. "
                f"{', '.join(str(d) for d in _divisors(batch_size))})"
            )


def check_inference(
    transform: TransformSpec, *, framework: str | None, batch_sizes: list[int]
) -> None:
    """An inference request's ``transform``: micro-batches that divide every batch size (any
    framework), and/or a graph optimization level, run by onnxruntime (``framework`` is the
    name the request gives, None when it names none). Its measured run takes both."""
    if transform.graph_optimization is None and transform.micro_batches == 1:
        raise ValueError(
            "transform names no transformation: give micro_batches (> 1) and/or "
            "graph_optimization (disabled, basic, extended or all)"
        )
    for size in batch_sizes:
        transform.check_batch(size, field="batch_size")
    if transform.graph_optimization is not None and framework != "onnxruntime":
        raise ValueError(
            "transform.graph_optimization is onnxruntime's: name framework onnxruntime@... "
            f"(got {framework or 'none'})"
        )


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, min(n, 64) + 1) if n % d == 0][:6]


def _integer(name: str, value: object, bound: b.Bound) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int {bound.text()}, got {value!r}")
    bound.check(name, value)
