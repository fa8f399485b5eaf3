"""ONNX Runtime operators: a one-node ONNX graph (``onnx_wire``) in an ``InferenceSession``
on the CPU provider. Forward only: an inference session computes no gradients.

ONNX convolutions and pools are NCHW: an NHWC spec's input is transposed in ``prepare``
(outside the timed call) and the output back in ``fetch``. ``matmul`` is a ``Gemm`` node
(transA/transB), ``batch_matmul`` a ``MatMul``. Opset 20 (the first with ``Gelu``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pinbench.operators.frameworks.base import Fetched
from pinbench.operators.inputs import OperatorInputs
from pinbench.specs.operators.shapes import input_shapes, output_shape
from pinbench.specs.operators.spec import OperatorSpec

NAME = "onnxruntime"
OPSET = 20
IR_VERSION = 10


def version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


def supports(spec: OperatorSpec) -> str | None:
    if spec.direction == "backward":
        return "an ONNX Runtime inference session computes no gradients (forward only)"
    if spec.dtype == "bfloat16":
        return "NumPy cannot feed bfloat16 tensors and the CPU provider lacks bfloat16 kernels"
    try:
        _session(spec, threads=1)
    except Exception as exc:  # the provider has no kernel for this node and dtype
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"no CPU kernel for {spec.op} in {spec.dtype}: {first[:300]}"
    return None


def _nhwc(spec: OperatorSpec) -> bool:
    return spec.op == "conv2d" and spec.p.text("layout") == "NHWC"


def _node(spec: OperatorSpec, names: list[str]) -> bytes:
    from pinbench.operators.frameworks import onnx_wire as helper

    p, op = spec.p, spec.op
    if op == "conv2d":
        pad, stride, dil = p.integer("padding"), p.integer("stride"), p.integer("dilation")
        return helper.node(
            "Conv",
            names,
            ["y"],
            kernel_shape=[p.integer("kernel_h"), p.integer("kernel_w")],
            strides=[stride, stride],
            pads=[pad] * 4,
            dilations=[dil, dil],
            group=p.integer("groups"),
        )
    if op == "matmul":
        ta, tb = int(p.flag("trans_a")), int(p.flag("trans_b"))
        return helper.node("Gemm", names, ["y"], transA=ta, transB=tb)
    if op == "batch_matmul":
        return helper.node("MatMul", names, ["y"])
    if op in ("relu", "gelu"):
        return helper.node("Relu" if op == "relu" else "Gelu", names, ["y"])
    if op in ("max_pool2d", "avg_pool2d"):
        k, stride, pad = p.integer("kernel"), p.integer("stride"), p.integer("padding")
        attrs: dict[str, Any] = {"kernel_shape": [k, k], "strides": [stride] * 2, "pads": [pad] * 4}
        if op == "avg_pool2d":
            return helper.node("AveragePool", names, ["y"], count_include_pad=1, **attrs)
        return helper.node("MaxPool", names, ["y"], **attrs)
    if op == "batch_norm":
        return helper.node("BatchNormalization", names, ["y"], epsilon=p.real("eps"))
    if op == "softmax":
        return helper.node("Softmax", names, ["y"], axis=p.integer("axis"))
    if op == "layer_norm":
        axis = -len(p.dims("normalized_shape"))
        return helper.node("LayerNormalization", names, ["y"], axis=axis, epsilon=p.real("eps"))
    raise KeyError(op)


def _model(spec: OperatorSpec) -> bytes:
    from pinbench.operators.frameworks import onnx_wire

    elem = {"float32": onnx_wire.FLOAT, "float16": onnx_wire.FLOAT16}[spec.dtype]
    shapes = input_shapes(spec.op, spec.params)
    out = output_shape(spec.op, spec.params)
    if _nhwc(spec):
        n, h, w, c = shapes["x"]
        shapes["x"] = (n, c, h, w)
        out = (out[0], out[3], out[1], out[2])
    return onnx_wire.model(
        _node(spec, list(shapes)),
        spec.op,
        shapes,
        {"y": out},
        elem_type=elem,
        opset=OPSET,
        ir_version=IR_VERSION,
    )


def _session(spec: OperatorSpec, *, threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    return ort.InferenceSession(_model(spec), options, providers=["CPUExecutionProvider"])


def prepare(
    spec: OperatorSpec, inputs: OperatorInputs, *, threads: int | None = None
) -> Callable[[], Any]:
    session = _session(spec, threads=threads)
    feeds = dict(inputs.tensors)
    if _nhwc(spec):
        feeds["x"] = np.ascontiguousarray(feeds["x"].transpose(0, 3, 1, 2))
    outputs = ["y"]

    def call() -> Any:
        return session.run(outputs, feeds)

    call()  # the first run allocates and plans: setup, not a sample
    return call


def fetch(spec: OperatorSpec, result: Any) -> Fetched:
    y = np.asarray(result[0], dtype=np.float64)
    if _nhwc(spec):
        y = y.transpose(0, 2, 3, 1)
    return (np.ascontiguousarray(y),)


def sync(result: Any) -> None:
    """``session.run`` returns computed arrays; nothing to wait for."""
