"""PyTorch operators on the CPU: ``torch.nn.functional``; backward through autograd.

An NHWC convolution is handed to PyTorch as its channels-last memory format (a view of the
same array, logically NCHW), which is how PyTorch runs NHWC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pinbench.operators.frameworks.base import Fetched
from pinbench.operators.inputs import OperatorInputs
from pinbench.specs.operators.schema import OPS
from pinbench.specs.operators.spec import OperatorSpec

NAME = "torch"


def version() -> str:
    import torch

    return str(torch.__version__)


def supports(spec: OperatorSpec) -> str | None:
    return None


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def _nhwc(spec: OperatorSpec) -> bool:
    return spec.op == "conv2d" and spec.p.text("layout") == "NHWC"


def _function(spec: OperatorSpec) -> Callable[..., Any]:
    import torch
    import torch.nn.functional as F

    p, op = spec.p, spec.op
    if op == "conv2d":
        args = (p.integer("stride"), p.integer("padding"), p.integer("dilation"))
        groups = p.integer("groups")
        return lambda x, w: F.conv2d(x, w, None, *args, groups)
    if op == "matmul":
        ta, tb = p.flag("trans_a"), p.flag("trans_b")
        return lambda a, b: torch.mm(a.t() if ta else a, b.t() if tb else b)
    if op == "batch_matmul":
        return torch.bmm
    if op == "relu":
        return torch.relu
    if op == "gelu":
        return F.gelu
    if op in ("max_pool2d", "avg_pool2d"):
        k, stride, pad = p.integer("kernel"), p.integer("stride"), p.integer("padding")
        if op == "max_pool2d":
            return lambda x: F.max_pool2d(x, k, stride, pad)
        return lambda x: F.avg_pool2d(x, k, stride, pad, count_include_pad=True)
    if op == "batch_norm":
        eps = p.real("eps")
        return lambda x, scale, bias, mean, var: F.batch_norm(
            x, mean, var, scale, bias, training=False, eps=eps
        )
    if op == "softmax":
        axis = p.integer("axis")
        return lambda x: torch.softmax(x, axis)
    if op == "layer_norm":
        norm, eps = list(p.dims("normalized_shape")), p.real("eps")
        return lambda x, weight, bias: F.layer_norm(x, norm, weight, bias, eps)
    raise KeyError(op)


def prepare(
    spec: OperatorSpec, inputs: OperatorInputs, *, threads: int | None = None
) -> Callable[[], Any]:
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    dtype = _dtype(spec.dtype)
    tensors = {name: torch.from_numpy(a).to(dtype) for name, a in inputs.tensors.items()}
    if _nhwc(spec):
        tensors["x"] = tensors["x"].permute(0, 3, 1, 2)  # NHWC memory, NCHW logical
        tensors["w"] = tensors["w"].contiguous(memory_format=torch.channels_last)
    fn = _function(spec)
    args = list(tensors.values())
    call: Callable[[], Any]
    if spec.direction == "forward":

        def call() -> Any:
            return fn(*args)

    else:
        assert inputs.upstream is not None
        upstream = torch.from_numpy(inputs.upstream).to(dtype)
        if _nhwc(spec):
            upstream = upstream.permute(0, 3, 1, 2)
        leaves = [tensors[name].requires_grad_(True) for name in OPS[spec.op].grads]

        def call() -> Any:
            return torch.autograd.grad(fn(*args), leaves, upstream)

    call()  # the first call (allocator, kernel selection) is setup, not a sample
    return call


def fetch(spec: OperatorSpec, result: Any) -> Fetched:
    import torch

    outs = (result,) if isinstance(result, torch.Tensor) else tuple(result)
    arrays = [t.detach().to(torch.float64).numpy() for t in outs]
    if _nhwc(spec):
        arrays[0] = arrays[0].transpose(0, 2, 3, 1)  # y, or the gradient of x
    return tuple(np.ascontiguousarray(a) for a in arrays)


def sync(result: Any) -> None:
    """CPU kernels return when done; nothing to wait for."""
