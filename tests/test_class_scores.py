"""A ``type: classification`` output is one row of class scores per sample (decision 115):
its shape is checked on the first answer, before anything is timed, in every mode; any other
shape fails the run naming the output and its shape, and no number is recorded. Accepted
shapes score as a NumPy reference of the same logits; a NaN score is an undefined metric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench import catalog as builtin
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.tasks.classification.scores import (
    LabelOutsideScores,
    NotClassScores,
    class_scores,
    classification_metrics,
)
from pinbench.worker.undefined import UndefinedMetric
from pinbench.workspace import Workspace
from tests.helpers import digits_logreg, publish_digits_model, write_files

Array = np.ndarray[Any, Any]

# --- the shape rule --------------------------------------------------------------------------

# (shape, why it is accepted or refused, the (N, C) it reads as or the reason's words)
SHAPES = [
    ((4, 10), "one row of 10 class scores per sample", (4, 10)),
    ((4, 1, 10), "an axis of length 1 before the classes holds nothing else", (4, 10)),
    ((4, 10, 1, 1), "a convolutional head's 1 x 1 map", (4, 10)),
    ((4, 1), "one class column (a dataset of one class would agree)", (4, 1)),
    ((4,), "a class index per sample, not its scores", "one value per sample"),
    ((4, 40, 6625), "40 distributions per sample (text recognition)", "40 x 6625 values"),
    ((4, 2, 5), "two rows of five: flattened it would pass a 10-class check", "2 x 5 values"),
    ((4, 8, 8, 10), "a map of class scores (segmentation)", "8 x 8 x 10 values"),
]


@pytest.mark.parametrize(
    ("shape", "expected"), [(s[0], s[2]) for s in SHAPES], ids=[s[1] for s in SHAPES]
)
def test_only_one_row_of_class_scores_per_sample_is_scored(
    shape: tuple[int, ...], expected: tuple[int, int] | str
) -> None:
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    if isinstance(expected, tuple):
        scores = class_scores(values, name="logits", batch=4)
        assert scores.shape == expected
        assert np.array_equal(scores.ravel(), values.ravel())  # the same values, in order
        return
    with pytest.raises(NotClassScores) as caught:
        class_scores(values, name="logits", batch=4)
    assert caught.value.output == "logits" and caught.value.shape == shape
    assert f"'logits' has shape {list(shape)}" in str(caught.value)
    assert expected in str(caught.value)


def test_the_first_axis_must_be_the_batch() -> None:
    with pytest.raises(NotClassScores, match=r"first axis should be the batch's 4 samples"):
        class_scores(np.zeros((1, 10)), name="logits", batch=4)


# --- the metrics and their undefined cases -----------------------------------------------------


def _reference(scores: Array, truth: Array, k: int) -> float:
    """Top-k by sorting each row by hand: ties go to the lower class index."""
    hits = 0
    for row, label in zip(scores, truth, strict=True):
        ranked = sorted(range(len(row)), key=lambda c: (-row[c], c))
        hits += int(label in ranked[:k])
    return hits / len(truth)


@pytest.mark.parametrize("shape", [(30, 7), (30, 1, 7), (30, 7, 1, 1), (30, 3)])
def test_top1_and_top5_equal_a_reference(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 4, size=shape).astype(np.float32)  # many ties
    truth = rng.integers(0, shape[1 if len(shape) != 3 else 2], size=30)
    metrics = classification_metrics(scores, truth)
    flat = scores.reshape(30, -1)
    assert metrics["top1"] == _reference(flat, truth, 1)
    if flat.shape[1] >= 5:
        assert metrics["top5"] == _reference(flat, truth, 5)
    else:  # always 1.0 with fewer than five classes: left out, not recorded
        assert "top5" not in metrics
    assert metrics["accuracy_samples_count"] == 30


def test_a_nan_score_makes_top1_undefined_not_a_number() -> None:
    scores = np.eye(4, dtype=np.float32)
    scores[2, 1] = np.nan  # NumPy would rank it last, PyTorch's argmax first
    with pytest.raises(UndefinedMetric, match=r"NaN scores for 1 of the scored samples") as caught:
        classification_metrics(scores, np.arange(4), name="logits")
    assert caught.value.metric == "top1"


def test_no_sample_scored_is_undefined() -> None:
    with pytest.raises(UndefinedMetric, match="no sample was scored"):
        classification_metrics(np.zeros((0, 10)), np.zeros(0, dtype=np.int64))


# (labels, why they do not fit an output of three class scores)
OUTSIDE = [
    ([0, 1, 2, 7], 7, "class 7 has no score: never predicted, always a miss"),
    ([0, 1, 2, 3], 3, "one past the last class"),
    ([0, -1, 2, 1], -1, "a negative class index"),
]


@pytest.mark.parametrize(("labels", "label"), [o[:2] for o in OUTSIDE], ids=[o[2] for o in OUTSIDE])
def test_a_label_the_output_has_no_score_for_is_refused_not_counted_a_miss(
    labels: list[int], label: int
) -> None:
    with pytest.raises(LabelOutsideScores) as caught:
        classification_metrics(np.eye(4, 3), np.array(labels), name="logits")
    assert (caught.value.output, caught.value.classes, caught.value.label) == ("logits", 3, label)
    assert "'logits' scores 3 classes (0..2) but a label is class" in str(caught.value)


# --- through a run ---------------------------------------------------------------------------

X = {"name": "x", "element_type": "float32", "shape": [1, 8, 8]}
STEPS = [{"normalize": {"mean": [0.0], "std": [16.0]}}, {"layout": {"to": "NCHW"}}]


def _model(tail: str) -> bytes:
    """The digits logistic regression ``x (N, 1, 8, 8) -> logits (N, 10)`` then ``tail``:
    ``reshape:D,D,...`` (a Reshape to those dims, -1 the batch), ``columns:K`` (the first K
    scores), ``argmax`` (ArgMax: the
    class index per sample) or ``mean-over-batch`` (one row for the whole batch)."""
    from onnx import TensorProto, helper, numpy_helper

    weights, bias = digits_logreg()
    nodes = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "W", "b"], ["logits"], transB=1),
    ]
    inits = [
        numpy_helper.from_array(weights.astype(np.float32), "W"),
        numpy_helper.from_array(bias.astype(np.float32), "b"),
    ]
    if tail.startswith("reshape:"):
        dims = [int(d) for d in tail.removeprefix("reshape:").split(",")]
        inits.append(numpy_helper.from_array(np.array(dims, dtype=np.int64), "dims"))
        nodes.append(helper.make_node("Reshape", ["logits", "dims"], ["out"]))
        out_type = TensorProto.FLOAT
    elif tail.startswith("columns:"):  # the first K class scores only: (N, K)
        end = int(tail.removeprefix("columns:"))
        for name, value in (("starts", 0), ("ends", end), ("axes", 1)):
            inits.append(numpy_helper.from_array(np.array([value], dtype=np.int64), name))
        nodes.append(helper.make_node("Slice", ["logits", "starts", "ends", "axes"], ["out"]))
        out_type = TensorProto.FLOAT
    elif tail == "argmax":
        nodes.append(helper.make_node("ArgMax", ["logits"], ["out"], axis=1, keepdims=0))
        out_type = TensorProto.INT64
    else:
        nodes.append(helper.make_node("ReduceMean", ["logits"], ["out"], axes=[0], keepdims=1))
        out_type = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("out", out_type, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def _publish(ws: Workspace, root: Path, version: str, tail: str) -> str:
    return publish_digits_model(
        ws,
        root / version,
        version,
        {"m.onnx": _model(tail)},
        inputs=[{**X, "steps": STEPS}],
        outputs=[{"name": "out", "type": "classification"}],
    )


def _lock(ws: Workspace, model: str, mode: str, batch_size: int = 1) -> Lockfile:
    request = {
        "model": model,
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": {"mode": mode},
        "batch_size": batch_size,
    }
    return service.lock(ws, parse_request(request))[0]


def quiet(text: str) -> None:
    pass


# (tail, batch size, what the error names); the reshape to (N, 2, 5) is the case in
# small: its 10 values pass the dataset's 10-class check, and the old code scored top-1 over
# them and recorded it as a success.
REFUSED = [
    ("reshape:-1,2,5", 1, "'out' has shape [1, 2, 5]: 2 x 5 values per sample"),
    ("reshape:-1,5,2", 1, "'out' has shape [1, 5, 2]: 5 x 2 values per sample"),
    ("argmax", 1, "'out' has shape [1]: one value per sample"),
    ("mean-over-batch", 2, "'out' has shape [1, 10]: its first axis should be the batch's 2"),
]


@pytest.mark.parametrize(("tail", "batch_size", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_an_output_that_is_not_class_scores_fails_the_run_before_timing(
    digits: Workspace, tmp_path: Path, tail: str, batch_size: int, message: str
) -> None:
    model = _publish(digits, tmp_path, "7.0.0", tail)
    for mode in ("accuracy", "performance"):  # a declared type is honoured or refused
        with pytest.raises(EvaluationFailed) as caught:
            run_lockfile(digits, _lock(digits, model, mode, batch_size), say=quiet)
        assert message in str(caught.value)
    runs = list_runs(digits)
    assert [r["status"] for r in runs] == ["failed", "failed"]
    for run in runs:
        assert message in run["error"]
        assert "top1" not in run and "latency_p50_ns" not in run  # nothing scored or timed


@pytest.mark.parametrize("tail", ["reshape:-1,10", "reshape:-1,1,10", "reshape:-1,10,1,1"])
def test_class_scores_with_axes_of_length_one_score_as_the_logits_do(
    digits: Workspace, tmp_path: Path, tail: str
) -> None:
    model = _publish(digits, tmp_path, "7.1.0", tail)
    run_lockfile(digits, _lock(digits, model, "accuracy"), say=quiet)
    (run,) = list_runs(digits)
    assert run["status"] == "succeeded", run.get("error")
    _, x_test, _, y_test = builtin.digits_split()
    weights, bias = digits_logreg()
    logits = (x_test.reshape(len(x_test), -1).astype(np.float32) / 16.0) @ weights.T + bias
    assert run["top1"] == pytest.approx(_reference(logits, y_test, 1), abs=1e-12)
    assert run["top5"] == pytest.approx(_reference(logits, y_test, 5), abs=1e-12)


def test_labels_past_the_outputs_classes_fail_the_run_when_the_dataset_declares_no_count(
    digits: Workspace, tmp_path: Path
) -> None:
    """Without ``labels.classes`` nothing compared the model's class count with the labels:
    a 3-class output scored against digits labelled 0..9 recorded the share of samples of
    classes 0..2 it got right as top-1, a success."""
    _, x_test, _, y_test = builtin.digits_split()
    arrays = {}
    for name, array in (("images.npy", x_test), ("labels.npy", y_test)):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        np.save(tmp_path / name, array, allow_pickle=False)
        arrays[name] = (tmp_path / name).read_bytes()
    dataset = {
        "kind": "dataset",
        "name": "digits-no-class-count",
        "version": "1.0.0",
        "data": {"format": "npy", "path": "images.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy"},  # no `classes`
        "files": write_files(tmp_path / "data", arrays),
    }
    publish(digits, parse_manifest(dataset), manifest_dir=tmp_path / "data", publisher="test")
    model = _publish(digits, tmp_path, "7.2.0", "columns:3")
    for mode, refused in (("accuracy", True), ("performance", False)):
        request = {"model": model, "dataset": "digits-no-class-count@1", "scenario": {"mode": mode}}
        lock = service.lock(digits, parse_request(request))[0]
        if not refused:  # no labels are read: nothing to compare
            run_lockfile(digits, lock, say=quiet)
            continue
        with pytest.raises(LabelOutsideScores, match=r"'out' scores 3 classes .* is class 9"):
            run_lockfile(digits, lock, say=quiet)
    failed, succeeded = list_runs(digits)[::-1]
    assert failed["status"] == "failed" and succeeded["status"] == "succeeded"
    assert "top1" not in failed and "latency_p50_ns" not in failed  # refused before timing
