"""Analytical work of an operator: FLOPs, bytes moved, arithmetic intensity.

Conventions (docs/decisions/, decision 107):

* A multiply-add is 2 FLOPs. Convolution: ``2 * |y| * C/groups * KH * KW``; matmul ``2MNK``
  (times B when batched). Elementwise and normalising operators count each operation of their
  defining formula per element, a transcendental (``exp``, ``erf``) as one: relu 1, gelu 5
  (``x/sqrt2``, erf, ``+1``, ``*x``, ``*0.5``), softmax 5 (max, subtract, exp, sum, divide),
  layer norm 7 (mean, subtract, square, sum, scale by rstd, weight, bias), inference batch norm
  4 (subtract mean, scale by rstd, scale, bias); max pooling ``KH*KW - 1`` comparisons per
  output, average pooling ``KH*KW`` (adds and the divide). Per-row or per-channel work
  (a square root per channel) is left out.
* Bytes are the least traffic: every input (weights and statistics included) read once and
  the output written once, at the dtype's size.
* ``backward`` is measured as one training step of the operator: the forward recorded for
  autograd plus the gradient of ``sum(y * upstream)`` with respect to every differentiable
  input. Its FLOPs are 3x the forward (the forward, plus 2x for the gradients: exact for
  convolution and matmul, whose input and weight gradients each cost one forward; the usual
  rule of thumb elsewhere). Its bytes are the forward's plus the upstream gradient and every
  input read again and one gradient written per differentiable input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import msgspec

from pinbench.specs.operators.schema import OPS, Params, ParamValue
from pinbench.specs.operators.shapes import elements, input_shapes, output_shape


class Counted(Protocol):
    """What ``counts`` reads of an operator benchmark (``spec.OperatorSpec`` has it; the spec
    imports this module to check its FLOPs, so this module does not import the spec)."""

    @property
    def op(self) -> str: ...
    @property
    def params(self) -> Mapping[str, ParamValue]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def direction(self) -> str: ...


ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
"""Bytes per element of each dtype."""

_PER_ELEMENT = {"relu": 1, "gelu": 5, "softmax": 5, "layer_norm": 7, "batch_norm": 4}
BACKWARD_FACTOR = 3
"""Backward FLOPs (forward + gradients) as a multiple of the forward's."""


class Counts(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    flops: int
    bytes: int

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte moved."""
        return self.flops / self.bytes if self.bytes else 0.0


def forward_flops(op: str, params: Mapping[str, ParamValue]) -> int:
    p = Params(params)
    out = elements(output_shape(op, params))
    if op == "conv2d":
        per_output = p.integer("c") // p.integer("groups") * p.integer("kernel_h")
        return 2 * out * per_output * p.integer("kernel_w")
    if op == "matmul":
        return 2 * p.integer("m") * p.integer("n") * p.integer("k")
    if op == "batch_matmul":
        return 2 * p.integer("b") * p.integer("m") * p.integer("n") * p.integer("k")
    if op == "max_pool2d":
        return out * (p.integer("kernel") ** 2 - 1)
    if op == "avg_pool2d":
        return out * p.integer("kernel") ** 2
    return out * _PER_ELEMENT[op]


def forward_bytes(op: str, params: Mapping[str, ParamValue], dtype: str) -> int:
    shapes = input_shapes(op, params)
    moved = sum(elements(s) for s in shapes.values()) + elements(output_shape(op, params))
    return moved * ITEMSIZE[dtype]


def counts(spec: Counted) -> Counts:
    """FLOPs and bytes of one call of ``spec`` in its direction (conventions above)."""
    flops = forward_flops(spec.op, spec.params)
    moved = forward_bytes(spec.op, spec.params, spec.dtype)
    if spec.direction == "backward":
        shapes = input_shapes(spec.op, spec.params)
        again = sum(elements(s) for s in shapes.values())
        grads = sum(elements(shapes[name]) for name in OPS[spec.op].grads)
        upstream = elements(output_shape(spec.op, spec.params))
        moved += (upstream + again + grads) * ITEMSIZE[spec.dtype]
        flops *= BACKWARD_FACTOR
    return Counts(flops=flops, bytes=moved)
