"""Float64 NumPy reference of every operator, and validation of a framework's output.

``forward(spec, inputs)`` returns ``(y,)``. ``backward(spec, inputs)`` returns the gradient of
``sum(y * upstream)`` with respect to each of the operator's differentiable inputs
(``schema.OPS[op].grads``, in that order), ``upstream`` being the seeded tensor in ``inputs``.
Both compute on the inputs exactly as the frameworks received them, widened to float64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from pinbench.operators.inputs import F64, OperatorInputs
from pinbench.specs.operators.shapes import output_shape
from pinbench.specs.operators.spec import OperatorSpec

TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 2e-3),
    "bfloat16": (5e-2, 1.6e-2),
}
"""``(rtol, atol)`` per dtype. An element passes when ``|out - ref| <= rtol * |ref| + atol *
max|ref|``: ``atol`` is a fraction of the reference's largest magnitude, so an element that is
a near-cancelling sum of many terms is held to the precision of the terms, not of its own
small value. float16 carries 11 significant bits (2**-11 = 4.9e-4 per rounding), bfloat16 8
(3.9e-3): the tolerances leave room for about ten roundings, float32 for accumulation orders;
a wrong result (a transposed weight, a missing term) misses them by orders of magnitude."""

_SQRT2 = math.sqrt(2.0)


def _erf(x: F64) -> F64:
    """``erf`` elementwise in float64 (NumPy has none; ``math.erf`` is exact to an ulp)."""
    out: F64 = np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.float64)
    return out


class Validation(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How far a framework's output is from the reference: ``max_rel_error`` is
    ``max_abs_error / max|ref|`` (the error relative to the output's scale); ``reason`` says
    why an invalid result is invalid."""

    max_abs_error: float
    max_rel_error: float
    valid: bool
    rtol: float
    atol: float
    reason: str | None = None


def validate(out: npt.NDArray[np.generic], ref: F64, dtype: str) -> Validation:
    """Compare one output tensor to its float64 reference under ``dtype``'s tolerance."""
    rtol, atol = TOLERANCES[dtype]

    def invalid(reason: str) -> Validation:
        inf = math.inf
        return Validation(
            max_abs_error=inf, max_rel_error=inf, valid=False, rtol=rtol, atol=atol, reason=reason
        )

    if tuple(out.shape) != tuple(ref.shape):
        return invalid(f"shape {list(out.shape)} where the reference has {list(ref.shape)}")
    got = np.asarray(out, dtype=np.float64)
    if not np.all(np.isfinite(got)):
        return invalid(f"{int(np.sum(~np.isfinite(got)))} non-finite values")
    error = np.abs(got - ref)
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    max_abs = float(np.max(error)) if error.size else 0.0
    max_rel = max_abs / scale if scale else (0.0 if max_abs == 0 else math.inf)
    outside = error > rtol * np.abs(ref) + atol * scale
    reason = None
    if np.any(outside):
        reason = (
            f"{int(np.sum(outside))} of {error.size} values outside the {dtype} tolerance "
            f"(rtol {rtol:g}, atol {atol:g} x max|ref|)"
        )
    return Validation(
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        valid=reason is None,
        rtol=rtol,
        atol=atol,
        reason=reason,
    )


def validate_all(
    outs: Sequence[npt.NDArray[np.generic]], refs: Sequence[F64], dtype: str
) -> Validation:
    """Every output against its reference: the largest errors, valid only if all are."""
    rtol, atol = TOLERANCES[dtype]
    if len(outs) != len(refs):
        return Validation(
            max_abs_error=math.inf,
            max_rel_error=math.inf,
            valid=False,
            rtol=rtol,
            atol=atol,
            reason=f"{len(outs)} outputs where the reference has {len(refs)}",
        )
    each = [validate(o, r, dtype) for o, r in zip(outs, refs, strict=True)]
    reasons = [f"output {i}: {v.reason}" for i, v in enumerate(each) if v.reason]
    return Validation(
        max_abs_error=max(v.max_abs_error for v in each),
        max_rel_error=max(v.max_rel_error for v in each),
        valid=not reasons,
        rtol=rtol,
        atol=atol,
        reason="; ".join(reasons) or None,
    )


def reference(spec: OperatorSpec, inputs: OperatorInputs) -> tuple[F64, ...]:
    """The reference outputs of ``spec`` in its direction."""
    if spec.direction == "backward":
        return backward(spec, inputs)
    return forward(spec, inputs)


def forward(spec: OperatorSpec, inputs: OperatorInputs) -> tuple[F64]:
    t, p = inputs.float64(), spec.p
    op = spec.op
    if op == "conv2d":
        return (_conv(spec, t["x"], t["w"], None)[0],)
    if op == "matmul":
        return (_op(t["a"], p.flag("trans_a")) @ _op(t["b"], p.flag("trans_b")),)
    if op == "batch_matmul":
        return (np.matmul(t["a"], t["b"]),)
    x = t["x"]
    if op == "relu":
        return (np.maximum(x, 0.0),)
    if op == "gelu":
        return (0.5 * x * (1.0 + _erf(x / _SQRT2)),)
    if op in ("max_pool2d", "avg_pool2d"):
        return (_pool(spec, x),)
    if op == "batch_norm":
        c = (1, -1, 1, 1)
        rstd = 1.0 / np.sqrt(t["var"] + p.real("eps"))
        return ((x - t["mean"].reshape(c)) * (rstd * t["scale"]).reshape(c) + t["bias"].reshape(c),)
    if op == "softmax":
        return (_softmax(x, p.integer("axis")),)
    if op == "layer_norm":
        xhat, _ = _normalize(spec, x)
        return (xhat * t["weight"] + t["bias"],)
    raise KeyError(op)


def backward(spec: OperatorSpec, inputs: OperatorInputs) -> tuple[F64, ...]:
    t, p = inputs.float64(), spec.p
    assert inputs.upstream is not None, "backward inputs carry the upstream gradient"
    dy = inputs.upstream.astype(np.float64)
    op = spec.op
    if op == "conv2d":
        _, grads = _conv(spec, t["x"], t["w"], dy)
        assert grads is not None
        return grads
    if op == "matmul":
        ta, tb = p.flag("trans_a"), p.flag("trans_b")
        a, b = _op(t["a"], ta), _op(t["b"], tb)
        da, db = dy @ b.T, a.T @ dy
        return (_op(da, ta), _op(db, tb))
    if op == "batch_matmul":
        a, b = t["a"], t["b"]
        return (np.matmul(dy, b.transpose(0, 2, 1)), np.matmul(a.transpose(0, 2, 1), dy))
    x = t["x"]
    if op == "relu":
        return (dy * (x > 0),)
    if op == "gelu":
        cdf = 0.5 * (1.0 + _erf(x / _SQRT2))
        pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        return (dy * (cdf + x * pdf),)
    if op == "softmax":
        axis = p.integer("axis")
        y = _softmax(x, axis)
        return (y * (dy - np.sum(dy * y, axis=axis, keepdims=True)),)
    if op == "layer_norm":
        xhat, rstd = _normalize(spec, x)
        rank, norm = x.ndim, len(p.dims("normalized_shape"))
        axes = tuple(range(rank - norm, rank))
        lead = tuple(range(rank - norm))
        dweight = np.sum(dy * xhat, axis=lead)
        dbias = np.sum(dy, axis=lead)
        g = dy * t["weight"]
        dx = rstd * (
            g
            - np.mean(g, axis=axes, keepdims=True)
            - xhat * np.mean(g * xhat, axis=axes, keepdims=True)
        )
        return (dx, dweight, dbias)
    raise KeyError(op)


def _op(m: F64, transpose: bool) -> F64:
    return m.T if transpose else m


def _softmax(x: F64, axis: int) -> F64:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    out: F64 = e / np.sum(e, axis=axis, keepdims=True)
    return out


def _normalize(spec: OperatorSpec, x: F64) -> tuple[F64, F64]:
    rank, norm = x.ndim, len(spec.p.dims("normalized_shape"))
    axes = tuple(range(rank - norm, rank))
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + spec.p.real("eps"))
    return (x - mean) * rstd, rstd


def _windows(xp: F64, kh: int, kw: int, stride: int, dil: int, oh: int, ow: int) -> F64:
    """``(N, C, KH, KW, OH, OW)``: every window element of the padded NCHW input."""
    n, c = xp.shape[:2]
    cols = np.empty((n, c, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[
                :,
                :,
                i * dil : i * dil + stride * (oh - 1) + 1 : stride,
                j * dil : j * dil + stride * (ow - 1) + 1 : stride,
            ]
    return cols


def _pool(spec: OperatorSpec, x: F64) -> F64:
    p = spec.p
    k, stride, pad = p.integer("kernel"), p.integer("stride"), p.integer("padding")
    fill = -np.inf if spec.op == "max_pool2d" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    _, _, oh, ow = output_shape(spec.op, spec.params)
    cols = _windows(xp, k, k, stride, 1, oh, ow)
    out: F64 = cols.max(axis=(2, 3)) if spec.op == "max_pool2d" else cols.mean(axis=(2, 3))
    return out


def _conv(spec: OperatorSpec, x: F64, w: F64, dy: F64 | None) -> tuple[F64, tuple[F64, F64] | None]:
    """Forward ``y`` and, given ``dy``, the gradients ``(dx, dw)``; x/y/dy in the spec's
    layout, computed in NCHW."""
    p = spec.p
    nhwc = p.text("layout") == "NHWC"
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
        dy = None if dy is None else dy.transpose(0, 3, 1, 2)
    g, stride = p.integer("groups"), p.integer("stride")
    pad, dil = p.integer("padding"), p.integer("dilation")
    n, c, h, wd = x.shape
    k, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    cols = _windows(xp, kh, kw, stride, dil, oh, ow).reshape(n, g, cg, kh, kw, oh, ow)
    wg = w.reshape(g, k // g, cg, kh, kw)
    y = np.einsum("ngcijhw,gkcij->ngkhw", cols, wg, optimize=True).reshape(n, k, oh, ow)
    if nhwc:
        y = y.transpose(0, 2, 3, 1)
    if dy is None:
        return y, None
    dyg = dy.reshape(n, g, k // g, oh, ow)
    dw = np.einsum("ngcijhw,ngkhw->gkcij", cols, dyg, optimize=True).reshape(w.shape)
    dcols = np.einsum("gkcij,ngkhw->ngcijhw", wg, dyg, optimize=True).reshape(n, c, kh, kw, oh, ow)
    dxp = np.zeros_like(xp)
    for i in range(kh):
        for j in range(kw):
            dxp[
                :,
                :,
                i * dil : i * dil + stride * (oh - 1) + 1 : stride,
                j * dil : j * dil + stride * (ow - 1) + 1 : stride,
            ] += dcols[:, :, i, j]
    dx = dxp[:, :, pad : pad + h, pad : pad + wd]
    if nhwc:
        dx = dx.transpose(0, 2, 3, 1)
    return y, (dx, dw)
