"""An operator benchmark's request: which operator, its parameters, dtype, direction, seed.

The spec is plain data (a frozen msgspec struct) kept apart from any framework: the lockfile
will hold it, every framework runs the same spec on the same seeded inputs, and a rerun
re-derives everything from it. Constructing a spec validates it; a spec that exists is one
every framework module can be handed (shapes fit, sizes under the caps below).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from pinbench import bounds as b
from pinbench import typed
from pinbench.errors import InvalidDocument
from pinbench.specs.operators.counts import forward_flops
from pinbench.specs.operators.errors import (
    InvalidParameter,
    OutOfRange,
    TooLarge,
    UnknownOperator,
    UnknownParameter,
)
from pinbench.specs.operators.schema import (
    DIRECTIONS,
    DTYPES,
    OPS,
    REQUIRED,
    OpInfo,
    Param,
    Params,
    ParamValue,
)
from pinbench.specs.operators.shapes import elements, input_shapes, output_shape

MAX_RANK: Final = 8
MAX_ELEMENTS: Final = 1 << 28
"""Cap on the elements of all tensors of one call (inputs, output, and for backward the
upstream gradient and the gradients): 2**28, i.e. 1 GiB at float32 and 2 GiB for the float64
reference copies, so no request can ask for 100 GB."""
MAX_FLOPS: Final = 2 * 10**12
"""Cap on one forward call's FLOPs: the float64 NumPy reference must finish in minutes."""


class OperatorSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``op`` with ``params`` (see ``schema.OPS``; defaults filled in on construction, so
    equal specs compare and encode equal), ``dtype`` float32 | float16 | bfloat16,
    ``direction`` forward | backward, and the ``seed`` the input tensors come from."""

    op: str
    params: dict[str, ParamValue] = msgspec.field(default_factory=dict)
    dtype: str = "float32"
    direction: str = "forward"
    seed: int = 0

    def __post_init__(self) -> None:
        info = OPS.get(self.op)
        if info is None:
            raise UnknownOperator(op=self.op, known=sorted(OPS))
        if not isinstance(self.params, Mapping):
            raise InvalidParameter(
                op=self.op, field="params", value=self.params, limit="a mapping of names to values"
            )
        params = _check_params(info, self.params)
        msgspec.structs.force_setattr(self, "params", params)
        _check_scalar(self.op, "dtype", self.dtype, DTYPES)
        _check_scalar(self.op, "direction", self.direction, DIRECTIONS)
        if self.direction == "backward" and not info.grads:
            with_grads = [name for name, op in OPS.items() if op.grads]
            raise InvalidParameter(
                op=self.op,
                field="direction",
                value="backward",
                limit=f"no backward for {self.op}; backward is defined for "
                + ", ".join(with_grads),
            )
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise InvalidParameter(op=self.op, field="seed", value=self.seed, limit="an int")
        if not b.SEED.holds(self.seed):
            raise OutOfRange(op=self.op, field="seed", value=self.seed, limit=b.SEED.text())
        _check_fit(self.op, params)
        _check_size(self.op, params, self.direction)

    @property
    def p(self) -> Params:
        """Typed access to the parameters."""
        return Params(self.params)

    def describe(self) -> str:
        """``conv2d(n=1, c=64, ...) float32 forward seed 0``, for messages and tables."""
        args = ", ".join(f"{k}={_show(v)}" for k, v in self.params.items())
        return f"{self.op}({args}) {self.dtype} {self.direction} seed {self.seed}"


def parse_spec(data: Mapping[str, Any], *, source: str = "operator spec") -> OperatorSpec:
    """A spec from plain data (JSON, TOML, a lockfile section): msgspec's own type errors
    become ``InvalidDocument``; the spec's validation raises its own errors."""
    try:
        return typed.convert(data, OperatorSpec)
    except msgspec.ValidationError as exc:
        raise InvalidDocument(source=source, reason=str(exc)) from exc


def _show(value: ParamValue) -> str:
    return "x".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _check_scalar(op: str, name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InvalidParameter(op=op, field=name, value=value, limit=f"one of {', '.join(choices)}")


def _check_params(info: OpInfo, given: Mapping[str, object]) -> dict[str, ParamValue]:
    known = [p.name for p in info.params]
    for name in given:
        if info.param(name) is None:
            raise UnknownParameter(op=info.name, parameter=name, known=known)
    out: dict[str, ParamValue] = {}
    for param in info.params:
        if param.name in given:
            out[param.name] = _check_value(info.name, param, given[param.name])
        elif param.default is REQUIRED:
            raise InvalidParameter(
                op=info.name, field=param.name, value=None, limit=f"required ({param.help})"
            )
        else:
            out[param.name] = _check_value(info.name, param, param.default)
    # Pooling's stride defaults to its kernel (0 stands for "not given").
    if info.name in ("max_pool2d", "avg_pool2d") and out["stride"] == 0:
        out["stride"] = out["kernel"]
    return out


def _check_value(op: str, param: Param, value: object) -> ParamValue:
    def bad(limit: str) -> InvalidParameter:
        return InvalidParameter(op=op, field=param.name, value=value, limit=limit)

    if param.kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if param.kind == "str":
        if not isinstance(value, str) or value not in param.choices:
            raise bad(f"one of {', '.join(param.choices)}")
        return value
    if param.kind == "dims":
        if not isinstance(value, list | tuple) or not 1 <= len(value) <= MAX_RANK:
            raise bad(f"a list of 1 to {MAX_RANK} dimensions")
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in value):
            raise bad("every dimension an int")
        for d in value:
            if param.bound is not None and not param.bound.holds(d):
                limit = f"{param.bound.text()} (each dimension)"
                raise OutOfRange(op=op, field=param.name, value=d, limit=limit)
        return tuple(value)
    if param.kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad("a number")
        number: int | float = float(value)
    else:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an int")
        number = value
    if param.bound is not None and not param.bound.holds(number):
        raise OutOfRange(op=op, field=param.name, value=value, limit=param.bound.text())
    return number


def _check_fit(op: str, params: dict[str, ParamValue]) -> None:
    """Shapes that do not fit: a window larger than the padded input, groups, axes."""
    p = Params(params)

    def bad(field: str, limit: str) -> InvalidParameter:
        return InvalidParameter(op=op, field=field, value=params[field], limit=limit)

    if op == "conv2d":
        groups, pad, dil = p.integer("groups"), p.integer("padding"), p.integer("dilation")
        for channels in ("c", "out_channels"):
            if p.integer(channels) % groups:
                raise bad("groups", f"must divide {channels} = {p.integer(channels)}")
        for kernel_field, size in (("kernel_h", "h"), ("kernel_w", "w")):
            span = dil * (p.integer(kernel_field) - 1) + 1
            padded = p.integer(size) + 2 * pad
            if span > padded:
                raise bad(
                    kernel_field,
                    f"the kernel spans {span} (dilation {dil}) but the padded input has "
                    f"{size} + 2 * padding = {padded}",
                )
    elif op in ("max_pool2d", "avg_pool2d"):
        kernel, pad = p.integer("kernel"), p.integer("padding")
        if pad > kernel // 2:
            raise bad("padding", f"at most kernel // 2 = {kernel // 2}")
        for size in ("h", "w"):
            if kernel > p.integer(size) + 2 * pad:
                raise bad(
                    "kernel", f"larger than {size} + 2 * padding = {p.integer(size) + 2 * pad}"
                )
    elif op == "softmax":
        rank, axis = len(p.dims("shape")), p.integer("axis")
        if not -rank <= axis < rank:
            raise bad("axis", f"in [{-rank}, {rank - 1}] for a rank-{rank} shape")
        params["axis"] = axis % rank
    elif op == "layer_norm":
        shape, norm = p.dims("shape"), p.dims("normalized_shape")
        if len(norm) > len(shape) or shape[len(shape) - len(norm) :] != norm:
            raise bad("normalized_shape", f"must be the trailing dimensions of shape {list(shape)}")


def _check_size(op: str, params: Mapping[str, ParamValue], direction: str) -> None:
    shapes = input_shapes(op, params)
    count = sum(elements(s) for s in shapes.values()) + elements(output_shape(op, params))
    if direction == "backward":
        count += elements(output_shape(op, params))
        count += sum(elements(shapes[name]) for name in OPS[op].grads)
    if count > MAX_ELEMENTS:
        raise TooLarge(op=op, field="size", value=count, cap=MAX_ELEMENTS)
    flops = forward_flops(op, params)
    if flops > MAX_FLOPS:
        raise TooLarge(op=op, field="flops", value=flops, cap=MAX_FLOPS)
