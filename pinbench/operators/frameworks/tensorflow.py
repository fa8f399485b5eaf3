"""TensorFlow operators on the CPU: ``tf.nn`` in a ``tf.function``; backward by GradientTape.

TensorFlow's CPU convolution and pooling kernels take NHWC only: an NCHW spec's input is
transposed to NHWC (and the filter to HWIO) during ``prepare``, outside the timed call, and
the output (or the input's gradient) transposed back in ``fetch``. Explicit padding of a
pooling window is a ``tf.pad`` inside the timed call (``tf.nn`` pools take only SAME/VALID),
with -inf for max pooling and zeros for average pooling (``count_include_pad``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pinbench.operators.frameworks.base import Fetched
from pinbench.operators.inputs import OperatorInputs
from pinbench.specs.operators.errors import UnsupportedOperation
from pinbench.specs.operators.schema import OPS
from pinbench.specs.operators.spec import OperatorSpec

NAME = "tensorflow"
_SPATIAL = ("conv2d", "max_pool2d", "avg_pool2d")


def version() -> str:
    import tensorflow as tf

    return str(tf.__version__)


def supports(spec: OperatorSpec) -> str | None:
    if spec.op == "conv2d" and spec.direction == "backward":
        # Found by running it (TensorFlow 2.21): the CPU kernels raise InvalidArgument.
        if spec.p.integer("groups") > 1:
            return "TensorFlow has no gradients for grouped convolutions on the CPU"
        if spec.p.integer("dilation") > 1:
            return "TensorFlow's CPU gradient of a dilated convolution fails (filter size)"
    return None


def _to_nhwc(spec: OperatorSpec) -> bool:
    """Whether x arrives NCHW and is handed to TensorFlow as NHWC."""
    if spec.op == "conv2d":
        return spec.p.text("layout") == "NCHW"
    return spec.op in _SPATIAL


def _function(spec: OperatorSpec) -> Callable[..., Any]:
    import tensorflow as tf

    p, op = spec.p, spec.op
    if op == "conv2d":
        stride, pad, dil = p.integer("stride"), p.integer("padding"), p.integer("dilation")
        padding = [[0, 0], [pad, pad], [pad, pad], [0, 0]]
        return lambda x, w: tf.nn.conv2d(x, w, stride, padding, "NHWC", dil)
    if op == "matmul":
        ta, tb = p.flag("trans_a"), p.flag("trans_b")
        return lambda a, b: tf.linalg.matmul(a, b, transpose_a=ta, transpose_b=tb)
    if op == "batch_matmul":
        return lambda a, b: tf.linalg.matmul(a, b)
    if op == "relu":
        return lambda x: tf.nn.relu(x)
    if op == "gelu":
        return lambda x: tf.nn.gelu(x, approximate=False)
    if op in ("max_pool2d", "avg_pool2d"):
        k, stride, pad = p.integer("kernel"), p.integer("stride"), p.integer("padding")
        fill = -np.inf if op == "max_pool2d" else 0.0
        pool = tf.nn.max_pool2d if op == "max_pool2d" else tf.nn.avg_pool2d
        pads = [[0, 0], [pad, pad], [pad, pad], [0, 0]]

        def pooled(x: Any) -> Any:
            if pad:
                x = tf.pad(x, pads, constant_values=tf.cast(fill, x.dtype))
            return pool(x, k, stride, "VALID")

        return pooled
    if op == "batch_norm":
        eps = p.real("eps")

        def norm(x: Any, scale: Any, bias: Any, mean: Any, var: Any) -> Any:
            c = (-1, 1, 1)  # NCHW: broadcast the per-channel vectors over H and W
            return tf.nn.batch_normalization(
                x, tf.reshape(mean, c), tf.reshape(var, c), tf.reshape(bias, c),
                tf.reshape(scale, c), eps,
            )  # fmt: skip

        return norm
    if op == "softmax":
        axis = p.integer("axis")
        return lambda x: tf.nn.softmax(x, axis=axis)
    if op == "layer_norm":
        rank, eps = len(p.dims("shape")), p.real("eps")
        axes = list(range(rank - len(p.dims("normalized_shape")), rank))

        def layer_norm(x: Any, weight: Any, bias: Any) -> Any:
            mean, var = tf.nn.moments(x, axes, keepdims=True)
            return (x - mean) * tf.math.rsqrt(var + eps) * weight + bias

        return layer_norm
    raise KeyError(op)


def _set_threads(threads: int | None) -> None:
    import tensorflow as tf

    if threads is None:
        return
    threading = tf.config.threading
    if threading.get_intra_op_parallelism_threads() == threads:
        return
    try:
        threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError as exc:  # TensorFlow fixes its thread pools when it first runs
        raise UnsupportedOperation(
            framework=NAME,
            op="operators",
            reason=f"its thread count is fixed once it has run ({exc}); asked for {threads}: "
            "run each thread count in its own process",
        ) from exc


def prepare(
    spec: OperatorSpec, inputs: OperatorInputs, *, threads: int | None = None
) -> Callable[[], Any]:
    import tensorflow as tf

    _set_threads(threads)
    dtype = getattr(tf, spec.dtype)
    arrays = dict(inputs.tensors)
    upstream = inputs.upstream
    if _to_nhwc(spec):
        arrays["x"] = arrays["x"].transpose(0, 2, 3, 1)
        if upstream is not None:
            upstream = upstream.transpose(0, 2, 3, 1)
    if spec.op == "conv2d":
        arrays["w"] = arrays["w"].transpose(2, 3, 1, 0)  # OIHW -> HWIO
    with tf.device("/CPU:0"):
        tensors = {
            n: tf.cast(tf.constant(np.ascontiguousarray(a)), dtype) for n, a in arrays.items()
        }
        fn = _function(spec)
        args = list(tensors.values())
        if spec.direction == "forward":
            graph = tf.function(fn)
        else:
            assert upstream is not None
            dy = tf.cast(tf.constant(np.ascontiguousarray(upstream)), dtype)
            order = list(tensors)
            wrt = [order.index(name) for name in OPS[spec.op].grads]

            def step(*xs: Any) -> Any:
                with tf.GradientTape() as tape:
                    for i in wrt:
                        tape.watch(xs[i])
                    y = fn(*xs)
                return tape.gradient(y, [xs[i] for i in wrt], output_gradients=dy)

            graph = tf.function(step)

        def call() -> Any:
            return graph(*args)

        call()  # traces the function: setup, not a sample
    return call


def fetch(spec: OperatorSpec, result: Any) -> Fetched:
    outs = list(result) if isinstance(result, list | tuple) else [result]
    arrays = [np.asarray(t.numpy(), dtype=np.float64) for t in outs]
    if _to_nhwc(spec):
        arrays[0] = arrays[0].transpose(0, 3, 1, 2)  # y, or the gradient of x
    if spec.op == "conv2d" and spec.direction == "backward":
        arrays[1] = arrays[1].transpose(3, 2, 0, 1)  # HWIO -> OIHW
    return tuple(np.ascontiguousarray(a) for a in arrays)


def sync(result: Any) -> None:
    """A CPU ``tf.function`` returns computed tensors; nothing to wait for."""
