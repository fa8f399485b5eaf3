"""Operator benchmarks (issue 22, L0): specs, counts, inputs, reference, frameworks, timing.

Shapes are tiny: these tests check correctness, never speed (no timing assertions).
TensorFlow runs with ``threads=None``: its thread pools are fixed once any test has used it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.errors import InvalidDocument, UserError
from pinbench.operators.frameworks import FRAMEWORKS
from pinbench.operators.inputs import generate, round_bfloat16
from pinbench.operators.reference import TOLERANCES, reference, validate, validate_all
from pinbench.operators.resnet50 import RESNET50_CONVS, resnet50_conv_specs
from pinbench.operators.run import OperatorResult, run_operator
from pinbench.operators.timing import time_calls
from pinbench.specs.operators.counts import counts
from pinbench.specs.operators.errors import (
    InvalidParameter,
    TooLarge,
    UnknownFramework,
    UnknownOperator,
    UnknownParameter,
    UnsupportedOperation,
)
from pinbench.specs.operators.loop import BadLoop
from pinbench.specs.operators.schema import OPS
from pinbench.specs.operators.spec import OperatorSpec, parse_spec

CONV: dict[str, Any] = {
    "n": 2, "c": 4, "h": 7, "w": 6, "out_channels": 6, "kernel_h": 3, "kernel_w": 2,
    "stride": 2, "padding": 1,
}  # fmt: skip
POOL: dict[str, Any] = {"n": 2, "c": 3, "h": 7, "w": 7, "kernel": 3, "stride": 2, "padding": 1}

# (id, op, params): every operator at a small shape, plus the variants that take other paths.
FORWARD = [
    ("conv2d", "conv2d", CONV),
    ("conv2d-nhwc", "conv2d", {**CONV, "layout": "NHWC"}),
    ("conv2d-grouped-dilated", "conv2d", {**CONV, "groups": 2, "dilation": 2}),
    ("matmul", "matmul", {"m": 3, "n": 4, "k": 5}),
    ("matmul-transposed", "matmul", {"m": 3, "n": 4, "k": 5, "trans_a": True, "trans_b": True}),
    ("batch_matmul", "batch_matmul", {"b": 2, "m": 3, "n": 4, "k": 5}),
    ("relu", "relu", {"shape": [3, 5]}),
    ("gelu", "gelu", {"shape": [3, 5]}),
    ("max_pool2d", "max_pool2d", POOL),
    ("avg_pool2d", "avg_pool2d", POOL),  # padding counted as zeros in all three
    ("batch_norm", "batch_norm", {"n": 2, "c": 3, "h": 4, "w": 4}),
    ("softmax", "softmax", {"shape": [3, 5]}),
    ("softmax-axis0", "softmax", {"shape": [3, 5], "axis": 0}),
    ("layer_norm", "layer_norm", {"shape": [3, 4, 6], "normalized_shape": [4, 6]}),
]
# Backward for PyTorch and TensorFlow: every operator with a backward reference.
BACKWARD = [
    ("conv2d", "conv2d", CONV),
    ("conv2d-nhwc", "conv2d", {**CONV, "layout": "NHWC"}),
    ("matmul-transposed", "matmul", {"m": 3, "n": 4, "k": 5, "trans_a": True}),
    ("batch_matmul", "batch_matmul", {"b": 2, "m": 3, "n": 4, "k": 5}),
    ("relu", "relu", {"shape": [3, 5]}),
    ("gelu", "gelu", {"shape": [3, 5]}),
    ("softmax", "softmax", {"shape": [3, 5]}),
    ("layer_norm", "layer_norm", {"shape": [3, 4, 6], "normalized_shape": [6]}),
]


def _threads(framework: str) -> int | None:
    return None if framework == "tensorflow" else 1


def _run(spec: OperatorSpec, framework: str) -> OperatorResult:
    return run_operator(spec, framework, samples=3, warmup=1, threads=_threads(framework))


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(("op", "params"), [c[1:] for c in FORWARD], ids=[c[0] for c in FORWARD])
def test_forward_matches_the_reference(framework: str, op: str, params: dict[str, Any]) -> None:
    result = _run(OperatorSpec(op=op, params=params, seed=3), framework)
    assert result.valid, result.validation.reason
    assert result.validation.max_rel_error < TOLERANCES["float32"][0]
    assert len(result.latencies_ns) == 3 and all(t > 0 for t in result.latencies_ns)
    assert result.flops_per_s is not None and result.flops_per_s > 0
    assert result.framework == framework and result.framework_version


@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
@pytest.mark.parametrize(("op", "params"), [c[1:] for c in BACKWARD], ids=[c[0] for c in BACKWARD])
def test_backward_matches_the_reference(framework: str, op: str, params: dict[str, Any]) -> None:
    spec = OperatorSpec(op=op, params=params, direction="backward", seed=5)
    result = _run(spec, framework)
    assert result.valid, result.validation.reason
    assert result.flops == 3 * counts(OperatorSpec(op=op, params=params)).flops


def test_reference_backward_is_the_gradient_by_finite_differences() -> None:
    """The reference's own gradients, against central differences of sum(y * upstream)."""
    for op, params in [
        ("conv2d", {**CONV, "groups": 2, "dilation": 2}),
        ("layer_norm", {"shape": [2, 5], "normalized_shape": [5]}),
        ("gelu", {"shape": [4]}),
        ("softmax", {"shape": [2, 3], "axis": 0}),
    ]:
        spec = OperatorSpec(op=op, params=params, direction="backward", seed=1)
        inputs = generate(spec)
        grads = reference(spec, inputs)
        assert inputs.upstream is not None
        up = inputs.upstream.astype(np.float64)
        for name, grad in zip(OPS[op].grads, grads, strict=True):
            tensor = inputs.tensors[name]
            index = tuple(int(i) for i in np.unravel_index(tensor.size // 2, tensor.shape))
            moved = []
            for step in (1e-6, -1e-6):
                nudged = {**inputs.tensors, name: tensor.astype(np.float64)}
                nudged[name][index] += step
                shifted = type(inputs)(
                    dtype="float32", tensors=nudged, upstream=None, digest=inputs.digest
                )
                forward = OperatorSpec(op=op, params=params, seed=1)
                moved.append(float(np.sum(reference(forward, shifted)[0] * up)))
            assert grad[index] == pytest.approx((moved[0] - moved[1]) / 2e-6, rel=1e-5, abs=1e-8)


def test_onnxruntime_refuses_backward_clearly() -> None:
    spec = OperatorSpec(op="matmul", params={"m": 2, "n": 2, "k": 2}, direction="backward")
    with pytest.raises(UnsupportedOperation) as info:
        run_operator(spec, "onnxruntime", samples=1, warmup=0)
    assert info.value.framework == "onnxruntime"
    assert "gradients" in info.value.reason
    bf16 = OperatorSpec(op="relu", params={"shape": (4,)}, dtype="bfloat16")
    with pytest.raises(UnsupportedOperation, match="bfloat16"):
        run_operator(bf16, "onnxruntime", samples=1, warmup=0)


def test_tensorflow_refuses_what_its_cpu_kernels_cannot_differentiate() -> None:
    spec = OperatorSpec(op="conv2d", params={**CONV, "groups": 2}, direction="backward")
    with pytest.raises(UnsupportedOperation, match="grouped"):
        run_operator(spec, "tensorflow", samples=1, warmup=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_torch_low_precision_is_held_to_its_dtype_tolerance(dtype: str, direction: str) -> None:
    spec = OperatorSpec(
        op="conv2d", params={**CONV, "c": 16, "out_channels": 8}, dtype=dtype, direction=direction
    )
    result = _run(spec, "torch")
    assert result.valid, result.validation.reason
    assert (result.validation.rtol, result.validation.atol) == TOLERANCES[dtype]
    # The low-precision error is real: float32's tolerance would refuse the same outputs.
    assert result.validation.max_rel_error > TOLERANCES["float32"][1]


def test_validate_refuses_what_float32_tolerance_cannot_explain() -> None:
    ref = np.linspace(-2.0, 2.0, 50)
    assert validate(ref.astype(np.float32), ref, "float32").valid
    half = ref.astype(np.float16)
    assert not validate(half, ref, "float32").valid
    assert validate(half, ref, "float16").valid
    wrong = validate(ref[::-1].copy(), ref, "float16")
    assert not wrong.valid and wrong.reason and "outside the float16 tolerance" in wrong.reason
    assert not validate(ref.reshape(5, 10), ref, "float32").valid  # shape
    nan = ref.copy()
    nan[3] = np.nan
    assert validate(nan, ref, "float32").reason == "1 non-finite values"
    assert not validate_all([ref], [ref, ref], "float32").valid  # a missing gradient


def test_a_wrong_implementation_is_reported_invalid_not_fast(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pinbench.operators.frameworks import torch as torch_ops

    real = torch_ops._function

    def off_by_a_thousandth(spec: OperatorSpec) -> Callable[..., Any]:
        fn = real(spec)
        return lambda *args: fn(*args) * 1.001

    monkeypatch.setattr(torch_ops, "_function", off_by_a_thousandth)
    result = _run(OperatorSpec(op="matmul", params={"m": 4, "n": 4, "k": 8}), "torch")
    assert not result.valid
    assert result.flops_per_s is None and result.bytes_per_s is None
    assert result.validation.reason and "outside the float32 tolerance" in result.validation.reason
    assert result.validation.max_rel_error == pytest.approx(1e-3, rel=0.05)


def test_a_wrong_fetch_is_reported_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    """A framework that hands back the transposed output: same values, wrong places."""
    from pinbench.operators.frameworks import onnxruntime as ort_ops

    real = ort_ops.fetch
    monkeypatch.setattr(ort_ops, "fetch", lambda spec, r: (real(spec, r)[0].T.copy(),))
    result = _run(OperatorSpec(op="matmul", params={"m": 4, "n": 4, "k": 4}), "onnxruntime")
    assert not result.valid


# (id, spec fields, error class, the field the error names)
BAD = [
    ("unknown op", {"op": "conv3d"}, UnknownOperator, None),
    ("params not a mapping", {"op": "relu", "params": [2, 3]}, InvalidParameter, "params"),
    (
        "unknown parameter",
        {"op": "relu", "params": {"shape": [2], "inplace": True}},
        UnknownParameter,
        "inplace",
    ),
    ("missing parameter", {"op": "relu"}, InvalidParameter, "shape"),
    (
        "kernel larger than input",
        {"op": "conv2d", "params": {**CONV, "h": 2, "padding": 0}},
        InvalidParameter,
        "kernel_h",
    ),
    (
        "dilated kernel larger than padded input",
        {"op": "conv2d", "params": {**CONV, "w": 2, "dilation": 4}},
        InvalidParameter,
        "kernel_w",
    ),
    (
        "groups not dividing channels",
        {"op": "conv2d", "params": {**CONV, "groups": 3}},
        InvalidParameter,
        "groups",
    ),
    (
        "groups not dividing out channels",
        {"op": "conv2d", "params": {**CONV, "groups": 4, "out_channels": 6}},
        InvalidParameter,
        "groups",
    ),
    ("zero stride", {"op": "conv2d", "params": {**CONV, "stride": 0}}, InvalidParameter, "stride"),
    (
        "a bool is not an int",
        {"op": "matmul", "params": {"m": True, "n": 1, "k": 1}},
        InvalidParameter,
        "m",
    ),
    (
        "unknown layout",
        {"op": "conv2d", "params": {**CONV, "layout": "CHWN"}},
        InvalidParameter,
        "layout",
    ),
    (
        "pool window larger than input",
        {"op": "max_pool2d", "params": {**POOL, "h": 1, "padding": 0}},
        InvalidParameter,
        "kernel",
    ),
    (
        "pool padding over half the window",
        {"op": "avg_pool2d", "params": {**POOL, "padding": 2}},
        InvalidParameter,
        "padding",
    ),
    (
        "softmax axis out of range",
        {"op": "softmax", "params": {"shape": [2, 3], "axis": 2}},
        InvalidParameter,
        "axis",
    ),
    (
        "normalized shape not trailing",
        {"op": "layer_norm", "params": {"shape": [2, 3], "normalized_shape": [2]}},
        InvalidParameter,
        "normalized_shape",
    ),
    ("zero dimension", {"op": "relu", "params": {"shape": [2, 0]}}, InvalidParameter, "shape"),
    ("rank over the cap", {"op": "relu", "params": {"shape": [1] * 9}}, InvalidParameter, "shape"),
    (
        "100 GB of tensors",
        {"op": "relu", "params": {"shape": [160_000, 160_000]}},
        TooLarge,
        "size",
    ),
    (
        "oversized conv",
        {"op": "conv2d", "params": {**CONV, "n": 4096, "h": 512, "w": 512}},
        TooLarge,
        "size",
    ),
    (
        "too much work (small tensors, 3.8 TFLOP)",
        {
            "op": "conv2d",
            "params": {
                **CONV,
                "n": 1,
                "c": 2048,
                "out_channels": 2048,
                "h": 96,
                "w": 96,
                "kernel_h": 7,
                "kernel_w": 7,
                "stride": 1,
                "padding": 3,
            },
        },
        TooLarge,
        "flops",
    ),
    (
        "unknown dtype",
        {"op": "relu", "params": {"shape": [2]}, "dtype": "float64"},
        InvalidParameter,
        "dtype",
    ),
    (
        "unknown direction",
        {"op": "relu", "params": {"shape": [2]}, "direction": "sideways"},
        InvalidParameter,
        "direction",
    ),
    (
        "no backward for pooling",
        {"op": "max_pool2d", "params": POOL, "direction": "backward"},
        InvalidParameter,
        "direction",
    ),
    (
        "negative seed",
        {"op": "relu", "params": {"shape": [2]}, "seed": -1},
        InvalidParameter,
        "seed",
    ),
]


@pytest.mark.parametrize(
    ("fields", "error", "field"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_bad_specs_are_refused_naming_the_field(
    fields: dict[str, Any], error: type[UserError], field: str | None
) -> None:
    with pytest.raises(error) as info:
        OperatorSpec(**fields)
    assert isinstance(info.value, UserError)
    if field is not None:
        assert getattr(info.value, "field", getattr(info.value, "parameter", None)) == field
        assert field in str(info.value)
    else:
        assert info.value.op == fields["op"]  # type: ignore[attr-defined]


def test_plain_data_round_trips_and_bad_documents_are_refused() -> None:
    spec = parse_spec({"op": "conv2d", "params": CONV, "seed": 7})
    assert spec.params["layout"] == "NCHW" and spec.params["dilation"] == 1  # defaults filled
    assert msgspec.json.decode(msgspec.json.encode(spec), type=OperatorSpec) == spec
    assert (
        parse_spec({"op": "softmax", "params": {"shape": [2, 3], "axis": -1}}).params["axis"] == 1
    )
    assert OperatorSpec(op="max_pool2d", params={**POOL, "stride": 0}).params["stride"] == 3
    with pytest.raises(InvalidDocument, match="unknown field"):
        parse_spec({"op": "relu", "params": {"shape": [2]}, "device": "gpu"})
    with pytest.raises(UnknownFramework):
        run_operator(spec, "mxnet", samples=1, warmup=0)
    with pytest.raises(BadLoop) as info:
        run_operator(spec, "torch", samples=0, warmup=0)
    assert info.value.field == "samples"


def test_counts_match_hand_computed_values() -> None:
    # 1x2x4x4 input, 3 filters of 2x3x3, no padding: a 1x3x2x2 output.
    conv = OperatorSpec(
        op="conv2d",
        params={"n": 1, "c": 2, "h": 4, "w": 4, "out_channels": 3, "kernel_h": 3, "kernel_w": 3},
    )
    # 12 outputs x 18 multiply-adds x 2; (32 + 54 + 12) elements x 4 bytes
    assert (counts(conv).flops, counts(conv).bytes) == (432, 392)
    assert counts(conv).intensity == pytest.approx(432 / 392)
    matmul = OperatorSpec(op="matmul", params={"m": 2, "n": 3, "k": 4})
    assert (counts(matmul).flops, counts(matmul).bytes) == (48, (8 + 12 + 6) * 4)
    half = OperatorSpec(op="matmul", params={"m": 2, "n": 3, "k": 4}, dtype="float16")
    assert counts(half).bytes == (8 + 12 + 6) * 2
    back = OperatorSpec(op="matmul", params={"m": 2, "n": 3, "k": 4}, direction="backward")
    # forward + dA + dB; bytes: forward's, then dY (6), A and B again (20), dA and dB (20)
    assert (counts(back).flops, counts(back).bytes) == (144, 104 + (6 + 20 + 20) * 4)
    grouped = OperatorSpec(
        op="conv2d", params={**conv.params, "c": 4, "out_channels": 4, "groups": 2}
    )
    assert counts(grouped).flops == 16 * 18 * 2  # each filter sees c / groups = 2 channels


def test_inputs_are_pinned_by_the_seed() -> None:
    def spec(**fields: Any) -> OperatorSpec:
        return OperatorSpec(**{"op": "conv2d", "params": CONV, "seed": 11, **fields})

    first, again = generate(spec()), generate(spec())
    assert first.digest == again.digest and first.digest.startswith("sha256:")
    assert all(np.array_equal(first.tensors[n], again.tensors[n]) for n in first.tensors)
    assert generate(spec(seed=12)).digest != first.digest
    assert generate(spec(dtype="float16")).digest != first.digest
    backward = generate(spec(direction="backward"))
    assert backward.digest != first.digest and backward.upstream is not None
    assert np.array_equal(backward.tensors["x"], first.tensors["x"])  # upstream comes after
    # Every framework ran on the same tensors: the digest is the run's.
    result = _run(spec(), "torch")
    assert result.inputs_digest == first.digest


def test_bfloat16_rounds_to_nearest_even() -> None:
    one_ulp = 2.0**-7
    values = np.array([1.0, 1.0 + one_ulp / 2, 1.0 + 3 * one_ulp / 2, 1.0 + one_ulp * 0.6, -2.5])
    expected = np.array([1.0, 1.0, 1.0 + 2 * one_ulp, 1.0 + one_ulp, -2.5])
    assert np.array_equal(round_bfloat16(values), expected.astype(np.float32))


def test_timed_loop_keeps_every_sample_and_the_last_result() -> None:
    calls: list[int] = []

    def call() -> int:
        calls.append(len(calls))
        return len(calls)

    timed = time_calls(call, samples=5, warmup=2)
    assert timed.latencies_ns.dtype == np.int64 and timed.latencies_ns.shape == (5,)
    assert len(calls) == 7 and timed.last == 7
    synced: list[object] = []
    time_calls(call, samples=2, warmup=1, sync=synced.append)
    assert synced == [8, 9, 10]


@pytest.mark.parametrize(
    "sync",
    [None, lambda result: None],
    ids=["no sync", "with sync"],  # the two timed loops in time_calls
)
def test_timed_loop_frees_the_previous_result_before_the_next_sample(
    sync: Callable[[Any], None] | None,
) -> None:
    """A result still alive while the next call runs keeps its memory from being reused and
    puts its deallocation inside the next sample (bench_ops: +2-5% on a PyTorch matmul)."""
    import weakref

    class Out:
        pass

    refs: list[weakref.ref[Out]] = []
    alive: list[int] = []

    def call() -> Out:
        alive.append(sum(ref() is not None for ref in refs))
        out = Out()
        refs.append(weakref.ref(out))
        return out

    timed = time_calls(call, samples=4, warmup=2, sync=sync)
    assert alive[2:] == [0, 0, 0, 0]  # every timed call: no earlier result alive
    assert timed.last is refs[-1]()  # the last result is still returned


def test_resnet50_table_is_the_architectures_convolutions() -> None:
    """Re-derived from the repository's ResNet-50 on the meta device (shapes, no compute)."""
    import torch

    from pinbench.worker.predictors.torch.architectures import ResNet50

    seen: dict[tuple[int, ...], int] = {}
    with torch.device("meta"):
        model = ResNet50()

        def hook(module: torch.nn.Module, args: tuple[torch.Tensor, ...], _: object) -> None:
            assert isinstance(module, torch.nn.Conv2d)
            _, c, h, _w = args[0].shape
            padding = module.padding[0]
            assert isinstance(padding, int)
            key = (c, h, module.out_channels, module.kernel_size[0], module.stride[0], padding)
            seen[key] = seen.get(key, 0) + 1

        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                m.register_forward_hook(hook)
        model(torch.empty(1, 3, 224, 224))
    table = {(c, h, k, kern, s, p): n for _, c, h, k, kern, s, p, n in RESNET50_CONVS}
    assert table == seen and sum(table.values()) == 53
    specs = resnet50_conv_specs()
    assert len(specs) == len(RESNET50_CONVS) and specs[0][1].params["kernel_h"] == 7


def test_importing_the_library_starts_no_framework() -> None:
    code = (
        "import sys, pinbench.operators, pinbench.operators.frameworks as f; f.load('torch');"
        "print(sorted(m for m in ('torch', 'tensorflow', 'onnxruntime', 'onnx') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the ONNX model is written without the onnx package (not in ONNX Runtime's environment)


@pytest.mark.parametrize(
    ("op", "params"),
    [
        ("conv2d", CONV),
        ("matmul", {"m": 3, "n": 4, "k": 5, "trans_a": True}),
        ("softmax", {"shape": (2, 3), "axis": -1}),
        ("layer_norm", {"shape": (2, 3, 4), "normalized_shape": (3, 4), "eps": 1e-3}),
    ],
)
def test_the_onnx_model_is_the_one_onnx_helper_builds(op: str, params: dict[str, Any]) -> None:
    import onnx
    from onnx import TensorProto, helper

    from pinbench.operators.frameworks import onnxruntime as ort_ops
    from pinbench.specs.operators.shapes import input_shapes, output_shape

    spec = OperatorSpec(op=op, params=params)
    ours = onnx.load_from_string(ort_ops._model(spec))
    onnx.checker.check_model(ours)
    shapes = input_shapes(op, spec.params)
    node = ours.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    theirs = helper.make_model(
        helper.make_graph(
            [helper.make_node(node.op_type, list(shapes), ["y"], **attrs)],
            op,
            [
                helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
                for n, s in shapes.items()
            ],
            [
                helper.make_tensor_value_info(
                    "y", TensorProto.FLOAT, list(output_shape(op, spec.params))
                )
            ],
        ),
        opset_imports=[helper.make_opsetid("", ort_ops.OPSET)],
    )
    theirs.ir_version = ort_ops.IR_VERSION
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True
    )
    if op == "softmax":
        assert attrs == {"axis": spec.params["axis"]}
    if op == "layer_norm":  # a negative int attribute: a ten-byte varint
        assert attrs["axis"] == -2 and attrs["epsilon"] == pytest.approx(1e-3)
