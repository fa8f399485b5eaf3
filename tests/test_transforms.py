"""Network transformations, validated (Deep500's level 1, issue 39 part 1): the error metrics
against a direct computation, micro-batched training against full-batch training on the
digits CNN (weights within float32's tolerance, peak saved-for-backward memory falling as k
grows), onnxruntime's graph optimization levels against the unoptimized graph, and bad specs
refused naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.errors import InvalidDocument
from pinbench.specs.training import TrainingSpec, parse_spec
from pinbench.specs.transforms import GraphLevel, TransformSpec
from pinbench.training.data import TrainModel
from pinbench.transforms.compare import TOLERANCES, compare
from pinbench.transforms.microbatch import (
    micro_outputs,
    predict_micro,
    validate_inference_micro,
    validate_training,
)
from pinbench.transforms.onnx_graph import validate_graph
from pinbench.transforms.result import TransformInvalid, TransformRecord
from tests.test_training import digits_data, start_model

# ---------------------------------------------------------------- the error metrics


def test_compare_states_the_errors_as_defined() -> None:
    reference = [np.array([1.0, -2.0, 0.0], np.float32), np.array([[4.0]], np.float32)]
    transformed = [np.array([1.0, -2.5, 0.25], np.float32), np.array([[4.0]], np.float32)]
    c = compare(transformed, reference, dtype="float32")
    diff = np.array([0.0, 0.5, 0.25, 0.0])
    assert c.elements == 4
    assert c.max_abs_err == 0.5
    assert c.max_rel_err == 0.25  # 0.5 / |-2|; the 0 reference is left out of the relative error
    assert c.l2_err == pytest.approx(float(np.sqrt((diff**2).sum())))
    assert c.rel_l2_err == pytest.approx(c.l2_err / float(np.sqrt(1 + 4 + 16)))
    assert (c.rtol, c.atol) == (TOLERANCES["float32"].rtol, TOLERANCES["float32"].atol)
    assert not c.valid
    reason = c.reason()
    assert reason is not None and reason.startswith("outside tolerance: max abs err 0.5")


@pytest.mark.parametrize(
    ("dtype", "error", "valid"),
    [
        ("float32", 0.9e-5, True),  # within atol 1e-5 (+ rtol 1e-4 * 0: the reference is 0)
        ("float32", 1.1e-5, False),  # just past it
        ("float64", 0.9e-12, True),
        ("float64", 1e-9, False),  # fine for float32, far outside float64's
        ("float16", 0.9e-3, True),
    ],
)
def test_the_tolerance_is_per_dtype(dtype: str, error: float, valid: bool) -> None:
    c = compare([np.array([error])], [np.array([0.0])], dtype=dtype)
    assert c.valid is valid


def test_a_relative_error_over_an_all_zero_reference_is_undefined_not_zero() -> None:
    c = compare([np.array([1e-6, 0.0])], [np.array([0.0, 0.0])], dtype="float32")
    assert c.max_rel_err is None and c.rel_l2_err is None and c.max_abs_err == 1e-6
    assert "max rel err undefined" in c.errors()
    record = TransformRecord(
        transform="graph_optimization=all", framework="onnxruntime", compared="outputs",
        comparison=c, time_s=0.1, reference_time_s=0.2, peak_bytes=None,
        reference_peak_bytes=None, memory="test",
    )  # fmt: skip
    assert "transform_max_rel_err" not in record.metrics()
    with pytest.raises(ValueError, match="no values to compare"):
        compare([np.zeros(0)], [np.zeros(0)], dtype="float32")


def test_a_nan_is_never_within_tolerance() -> None:
    c = compare([np.array([np.nan, 1.0])], [np.array([0.0, 1.0])], dtype="float32")
    assert not c.valid


def test_an_invalid_record_is_a_failed_run_with_no_time_or_memory_metric() -> None:
    record = TransformRecord(
        transform="micro_batches=2",
        framework="torch",
        compared="weights after 3 steps",
        comparison=compare([np.array([1.0])], [np.array([2.0])], dtype="float32"),
        time_s=0.5,
        reference_time_s=0.4,
        peak_bytes=10,
        reference_peak_bytes=20,
        memory="test",
    )
    assert set(record.metrics()) == {
        "transform_max_abs_err",
        "transform_max_rel_err",
        "transform_l2_err",
    }
    with pytest.raises(TransformInvalid, match=r"transformation micro_batches=2: outside tol"):
        record.check()


# ---------------------------------------------------------------- micro-batching


@pytest.fixture(scope="module")
def torch_start(tmp_path_factory: pytest.TempPathFactory) -> TrainModel:
    return start_model("torch", tmp_path_factory.mktemp("l1-torch"))


@pytest.fixture(scope="module")
def micro_runs(torch_start: TrainModel) -> dict[int, TransformRecord]:
    """Adam at 0.01, batches of 64, 3 steps with k = 1, 2, 4 micro-batches."""
    data = digits_data()
    return {
        k: validate_training(
            TrainingSpec(
                validation="a@1",
                learning_rate=0.01,
                batch_size=64,
                transform=TransformSpec(micro_batches=k, steps=3),
            ),
            "torch",
            torch_start,
            data,
        )
        for k in (1, 2, 4)
    }


def test_micro_batched_weights_are_within_float32_tolerance_of_full_batch(
    micro_runs: dict[int, TransformRecord],
) -> None:
    one = micro_runs[1].comparison
    assert (one.max_abs_err, one.l2_err, one.valid) == (0.0, 0.0, True)  # k=1 is the same step
    for k in (2, 4):
        c = micro_runs[k].comparison
        assert c.valid, c.reason()
        assert c.dtype == "float32" and micro_runs[k].compared == "weights after 3 steps"
        assert 0 < c.max_abs_err < TOLERANCES["float32"].atol  # summation order, no more
        assert c.elements == 16 * 9 + 16 + 32 * 16 * 9 + 32 + 10 * 128 + 10  # every weight


def test_peak_saved_memory_falls_as_k_grows_by_the_activations_share(
    micro_runs: dict[int, TransformRecord],
) -> None:
    """peak(k) = W + A / k: the weights autograd saves (W, the same for every k) plus one
    micro-batch's activations (A / k)."""
    peak = {k: r.peak_bytes for k, r in micro_runs.items()}
    assert all(r.reference_peak_bytes == peak[1] for r in micro_runs.values())
    assert peak[1] is not None and peak[2] is not None and peak[4] is not None
    assert peak[1] > peak[2] > peak[4]
    weights = 2 * peak[2] - peak[1]  # W from the law at k = 1, 2
    assert 4 * (peak[4] - weights) == peak[1] - weights  # and the law holds at k = 4
    kernels = (16 * 9 + 32 * 16 * 9 + 10 * 128) * 4  # conv and linear weights, float32
    assert kernels <= weights <= kernels + 64


def test_inference_micro_batches_concatenate_to_the_whole_batch_output() -> None:
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    seen: list[int] = []

    def predict(b: Any) -> Any:
        seen.append(len(b))
        return b * 2

    assert np.array_equal(predict_micro(predict, x, 4), x * 2)
    assert seen == [3, 3, 2, 2]


def test_micro_batched_outputs_concatenate_by_name_and_need_one_row_per_sample() -> None:
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    run = micro_outputs(lambda b: {"y": b.sum(1), "z": b * 2}, 3)
    out = run(x)
    assert np.array_equal(out["y"], x.sum(1)) and np.array_equal(out["z"], x * 2)
    pooled = micro_outputs(lambda b: {"mean": b.mean(0)}, 3)  # one row per batch, not sample
    wide = np.zeros((6, 4), np.float32)
    with pytest.raises(ValueError, match=r"output mean has shape \(4,\) for a micro-batch of 2"):
        pooled(wide)


def test_inference_micro_validation_compares_every_output() -> None:
    x = np.linspace(-1, 1, 40, dtype=np.float32).reshape(20, 2)
    record = validate_inference_micro(
        lambda b: {"y": b @ np.ones((2, 3), np.float32), "label": b.argmax(1)},
        x,
        TransformSpec(micro_batches=5),
        batch_size=10,
        framework="numpy",
    )
    c = record.comparison
    assert (c.valid, c.dtype, c.elements, c.max_abs_err) == (True, "float32", 20 * 3 + 20, 0.0)
    assert record.compared == "outputs of 20 samples" and record.transform == "micro_batches=5"


# ---------------------------------------------------------------- onnxruntime graph levels


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    from pinbench.catalog.torch_files import export_onnx
    from pinbench.worker.predictors.torch.architectures import digits_cnn

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("l1-onnx") / "digits-cnn.onnx"
    export_onnx(digits_cnn().eval(), (2, 1, 8, 8), path)
    return path


def _direct(path: Path, x: Any, level: Any) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.concatenate([session.run(None, {"x": x[i : i + 30]})[0] for i in range(0, 360, 30)])


@pytest.mark.parametrize("level", ["disabled", "basic", "extended", "all"])
def test_graph_optimization_levels_are_validated_against_the_unoptimized_graph(
    onnx_model: Path, level: GraphLevel
) -> None:
    import onnxruntime as ort

    x = digits_data().x_val[:360]
    record, graph = validate_graph(
        onnx_model, x, TransformSpec(graph_optimization=level, micro_batches=3), batch_size=30
    )
    c = record.comparison
    assert c.valid, c.reason()
    assert record.compared == "outputs of 360 samples" and c.elements == 3600
    levels = {
        "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    reference = _direct(onnx_model, x, levels["disabled"])
    transformed = _direct(onnx_model, x, levels[level])
    assert c.max_abs_err == pytest.approx(float(np.abs(transformed - reference).max()), abs=1e-7)
    assert c.l2_err == pytest.approx(float(np.linalg.norm(transformed - reference)), abs=1e-6)
    saved = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])  # the graph, whole
    assert saved.run(None, {"x": x[:30]})[0] == pytest.approx(transformed[:30], abs=1e-5)
    assert record.time_s > 0 and record.peak_bytes is None


def test_graph_micro_batches_must_divide_the_batch(onnx_model: Path) -> None:
    x = digits_data().x_val[:60]
    with pytest.raises(ValueError, match="micro_batches 4 does not divide batch_size 30"):
        validate_graph(onnx_model, x, TransformSpec(micro_batches=4), batch_size=30)


# ---------------------------------------------------------------- bad specs


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        ({"micro_batches": 3}, "transform.micro_batches 3 does not divide batch_size 64"),
        ({"micro_batches": 0}, "Expected `int` >= 1 - at `$.transform.micro_batches`"),
        ({"micro_batches": -2}, "Expected `int` >= 1 - at `$.transform.micro_batches`"),
        ({"micro_batches": 10**9}, "Expected `int` <= 65536 - at `$.transform.micro_batches`"),
        ({"micro_batches": 128}, "transform.micro_batches 128 does not divide batch_size 64"),
        ({"micro_batches": 2.0}, "Expected `int`, got `float` - at `$.transform.micro_batches`"),
        ({"micro_batches": True}, "Expected `int`, got `bool` - at `$.transform.micro_batches`"),
        ({"steps": 0}, "Expected `int` >= 1 - at `$.transform.steps`"),
        ({"fuse": True}, "unknown field `fuse` - at `$.transform`"),  # an unknown transformation
        ({"graph_optimization": "max"}, "Invalid enum value 'max'"),  # an unknown level
        (  # a graph level is for an ONNX model's inference, not PyTorch training
            {"graph_optimization": "all"},
            "transform.graph_optimization is an ONNX inference transformation",
        ),
    ],
)
def test_a_bad_transform_is_refused_naming_the_field(
    transform: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidDocument) as info:
        parse_spec({"validation": "a@1", "batch_size": 64, "transform": transform})
    assert message in str(info.value)


def test_a_spec_built_directly_is_checked_too() -> None:
    with pytest.raises(ValueError, match="micro_batches must be between 1 and 65536, got 0"):
        TransformSpec(micro_batches=0)


def test_a_training_spec_without_transform_encodes_as_before() -> None:
    from pinbench.specs.training import LATE_TRAINING_FIELDS

    assert LATE_TRAINING_FIELDS == ("transform",)
    spec = parse_spec({"validation": "a@1"})
    assert spec.transform is None
    assert msgspec.to_builtins(spec)["transform"] is None  # dropped by lockfile/request data
