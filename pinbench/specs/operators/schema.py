"""What each operator takes, as plain data: its parameters, its input tensors, its gradients.

The table drives validation (``spec.py``), the inputs generator, the counts and, later, the
CLI's ``--shape`` parsing and help. Parameters are scalars or a list of dimensions; every
spatial parameter (stride, padding, dilation, pooling kernel) is one int used for both height
and width, as in every convolution of ResNet-50.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from pinbench import bounds as b

ParamValue = int | float | bool | str | tuple[int, ...]
"""A parameter's value; a list of dimensions is held as a tuple."""

Kind = Literal["int", "float", "bool", "str", "dims"]

REQUIRED: Final = object()
"""The default of a parameter that must be given."""

DTYPES: Final = ("float32", "float16", "bfloat16")
DIRECTIONS: Final = ("forward", "backward")
LAYOUTS: Final = ("NCHW", "NHWC")


SIZE: Final = b.between(1, b.OPERATOR_SIZE.high, b.OPERATOR_SIZE.why)
"""A dimension, kernel, stride, dilation or group count (``pinbench.bounds``)."""
SIZE_OR_ZERO: Final = b.between(0, b.OPERATOR_SIZE.high, b.OPERATOR_SIZE.why)
"""Padding, or pooling's stride (0: the kernel)."""


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: Kind
    help: str
    default: object = REQUIRED
    bound: b.Bound | None = None
    """The values a number may take (``dims``: each dimension); None: any (an axis, checked
    against the shape's rank)."""
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OpInfo:
    """One operator: its parameters, its input tensors in order, and for ``backward`` the
    inputs it differentiates (empty: no backward reference, so ``backward`` is refused)."""

    name: str
    summary: str
    params: tuple[Param, ...]
    inputs: tuple[str, ...]
    grads: tuple[str, ...] = field(default=())

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _dim(name: str, help: str) -> Param:
    return Param(name, "int", help, bound=SIZE)


_NCHW = (
    _dim("n", "batch size"),
    _dim("c", "input channels"),
    _dim("h", "input height"),
    _dim("w", "input width"),
)
_SHAPE = Param("shape", "dims", "the input's shape, e.g. [8, 1024]", bound=SIZE)

OPS: Final[Mapping[str, OpInfo]] = {
    op.name: op
    for op in (
        OpInfo(
            "conv2d",
            "2-D convolution without bias: x (N,C,H,W) * w (K,C/groups,KH,KW)",
            (
                *_NCHW,
                _dim("out_channels", "output channels K"),
                _dim("kernel_h", "kernel height"),
                _dim("kernel_w", "kernel width"),
                Param("stride", "int", "stride (both axes)", 1, bound=SIZE),
                Param("padding", "int", "zero padding on each side (both axes)", 0, SIZE_OR_ZERO),
                Param("dilation", "int", "dilation (both axes)", 1, bound=SIZE),
                Param("groups", "int", "groups; divides c and out_channels", 1, bound=SIZE),
                Param("layout", "str", "layout of x and y", "NCHW", choices=LAYOUTS),
            ),
            ("x", "w"),
            ("x", "w"),
        ),
        OpInfo(
            "matmul",
            "GEMM y = op(a) @ op(b), (M,K) @ (K,N); op transposes when asked",
            (
                _dim("m", "rows of y"),
                _dim("n", "columns of y"),
                _dim("k", "reduction length"),
                Param("trans_a", "bool", "a is stored (K,M)", False),
                Param("trans_b", "bool", "b is stored (N,K)", False),
            ),
            ("a", "b"),
            ("a", "b"),
        ),
        OpInfo(
            "batch_matmul",
            "batched matrix multiply (B,M,K) @ (B,K,N)",
            (
                _dim("b", "batch"),
                _dim("m", "rows of y"),
                _dim("n", "columns of y"),
                _dim("k", "reduction length"),
            ),
            ("a", "b"),
            ("a", "b"),
        ),
        OpInfo("relu", "max(x, 0), elementwise", (_SHAPE,), ("x",), ("x",)),
        OpInfo("gelu", "x * Phi(x) (exact, with erf), elementwise", (_SHAPE,), ("x",), ("x",)),
        *(
            OpInfo(
                name,
                f"2-D {kind} pooling of x (N,C,H,W), square window; {pad}",
                (
                    *_NCHW,
                    _dim("kernel", "window size (both axes)"),
                    Param("stride", "int", "stride (both axes); default: kernel", 0, SIZE_OR_ZERO),
                    Param(
                        "padding", "int", "padding on each side, <= kernel // 2", 0, SIZE_OR_ZERO
                    ),
                ),
                ("x",),
            )
            for name, kind, pad in (
                ("max_pool2d", "max", "padding never wins"),
                ("avg_pool2d", "average", "padding counts as zeros (count_include_pad)"),
            )
        ),
        OpInfo(
            "batch_norm",
            "inference batch norm of x (N,C,H,W) with running mean/var, scale and bias",
            (*_NCHW, Param("eps", "float", "added to the variance", 1e-5, b.OPERATOR_EPS)),
            ("x", "scale", "bias", "mean", "var"),
        ),
        OpInfo(
            "softmax",
            "softmax along one axis",
            (_SHAPE, Param("axis", "int", "the axis, negative counts from the end", -1)),
            ("x",),
            ("x",),
        ),
        OpInfo(
            "layer_norm",
            "layer norm over the trailing normalized_shape, with weight and bias",
            (
                _SHAPE,
                Param(
                    "normalized_shape",
                    "dims",
                    "trailing dimensions of shape to normalize",
                    bound=SIZE,
                ),
                Param("eps", "float", "added to the variance", 1e-5, b.OPERATOR_EPS),
            ),
            ("x", "weight", "bias"),
            ("x", "weight", "bias"),
        ),
    )
}


@dataclass(frozen=True, slots=True)
class Params:
    """Typed read access to a validated parameter mapping (validation guarantees the types)."""

    values: Mapping[str, ParamValue]

    def integer(self, name: str) -> int:
        value = self.values[name]
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def real(self, name: str) -> float:
        value = self.values[name]
        assert isinstance(value, float)
        return value

    def flag(self, name: str) -> bool:
        value = self.values[name]
        assert isinstance(value, bool)
        return value

    def text(self, name: str) -> str:
        value = self.values[name]
        assert isinstance(value, str)
        return value

    def dims(self, name: str) -> tuple[int, ...]:
        value = self.values[name]
        assert isinstance(value, tuple)
        return value
