"""Tensor shapes of an operator, from its (validated) parameters.

Convolution weights are always ``(K, C/groups, KH, KW)`` (OIHW); ``x`` and ``y`` follow the
spec's ``layout``. A framework that wants another layout converts outside the timed call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pinbench.specs.operators.schema import Params, ParamValue

Shape = tuple[int, ...]


def conv_out(size: int, kernel: int, stride: int, padding: int, dilation: int = 1) -> int:
    """Output length of a convolution or pooling window along one axis (floor mode)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _nchw(p: Params, layout: str, c: int, h: int, w: int) -> Shape:
    n = p.integer("n")
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def input_shapes(op: str, params: Mapping[str, ParamValue]) -> dict[str, Shape]:
    """Every input tensor's shape, in the operator's input order."""
    p = Params(params)
    if op == "conv2d":
        c, groups = p.integer("c"), p.integer("groups")
        x = _nchw(p, p.text("layout"), c, p.integer("h"), p.integer("w"))
        w = (p.integer("out_channels"), c // groups, p.integer("kernel_h"), p.integer("kernel_w"))
        return {"x": x, "w": w}
    if op == "matmul":
        m, n, k = p.integer("m"), p.integer("n"), p.integer("k")
        a = (k, m) if p.flag("trans_a") else (m, k)
        b = (n, k) if p.flag("trans_b") else (k, n)
        return {"a": a, "b": b}
    if op == "batch_matmul":
        batch, m, n, k = (p.integer(x) for x in ("b", "m", "n", "k"))
        return {"a": (batch, m, k), "b": (batch, k, n)}
    if op in ("relu", "gelu", "softmax"):
        return {"x": p.dims("shape")}
    if op in ("max_pool2d", "avg_pool2d"):
        return {"x": _nchw(p, "NCHW", p.integer("c"), p.integer("h"), p.integer("w"))}
    if op == "batch_norm":
        c = p.integer("c")
        x = _nchw(p, "NCHW", c, p.integer("h"), p.integer("w"))
        return {"x": x, "scale": (c,), "bias": (c,), "mean": (c,), "var": (c,)}
    if op == "layer_norm":
        norm = p.dims("normalized_shape")
        return {"x": p.dims("shape"), "weight": norm, "bias": norm}
    raise KeyError(op)


def output_shape(op: str, params: Mapping[str, ParamValue]) -> Shape:
    p = Params(params)
    if op == "conv2d":
        stride, pad, dil = p.integer("stride"), p.integer("padding"), p.integer("dilation")
        oh = conv_out(p.integer("h"), p.integer("kernel_h"), stride, pad, dil)
        ow = conv_out(p.integer("w"), p.integer("kernel_w"), stride, pad, dil)
        return _nchw(p, p.text("layout"), p.integer("out_channels"), oh, ow)
    if op == "matmul":
        return (p.integer("m"), p.integer("n"))
    if op == "batch_matmul":
        return (p.integer("b"), p.integer("m"), p.integer("n"))
    if op in ("max_pool2d", "avg_pool2d"):
        kernel, stride, pad = p.integer("kernel"), p.integer("stride"), p.integer("padding")
        oh = conv_out(p.integer("h"), kernel, stride, pad)
        ow = conv_out(p.integer("w"), kernel, stride, pad)
        return (p.integer("n"), p.integer("c"), oh, ow)
    return input_shapes(op, params)["x"]


def elements(shape: Shape) -> int:
    return math.prod(shape)
