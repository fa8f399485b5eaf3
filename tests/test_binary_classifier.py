"""A one-sigmoid binary classifier scored on a classification dataset (issue 50): the model's
one ``type: binary`` output, one probability (or, ``form: logit``, one logit) per sample,
against classes 0 and 1, scored for accuracy, F1 and ROC-AUC. Each metric equals a direct
count written here and scikit-learn's; F1 and ROC-AUC left undefined where the truth cannot
define them, never recorded as 0. End to end, the digits model turned into an "is it an eight?"
detector runs unmodified in both forms and scores as the reference computation; paired with
the ten-class digits dataset it fails before anything is timed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn import metrics as sk

from pinbench import catalog as builtin
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.tasks.binary import NotProbabilities
from pinbench.tasks.classification.binary import (
    NotOneValuePerSample,
    NotTwoClasses,
    binary_metrics,
    one_value_per_sample,
)
from pinbench.worker.undefined import UndefinedMetric
from pinbench.workspace import Workspace
from tests.helpers import publish_digits_model, write_files
from tests.test_class_scores import STEPS, X

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(230)


def direct(values: Array, truth: Array, threshold: float, logit: bool) -> dict[str, float]:
    """The definitions counted sample by sample in Python: a sample is predicted positive
    where its probability is at or above the threshold; ROC-AUC over every (positive,
    negative) pair, a tie counting one half."""
    import math

    probability = [1 / (1 + math.exp(-v)) if logit else v for v in values.tolist()]
    predicted = [p >= threshold for p in probability]
    actual = [t == 1 for t in truth.tolist()]
    tp = sum(p and a for p, a in zip(predicted, actual, strict=True))
    fp = sum(p and not a for p, a in zip(predicted, actual, strict=True))
    fn = sum(a and not p for p, a in zip(predicted, actual, strict=True))
    pairs = [
        (vp, vn)
        for vp, a in zip(values.tolist(), actual, strict=True)
        if a
        for vn, b in zip(values.tolist(), actual, strict=True)
        if not b
    ]
    return {
        "binary_accuracy": sum(p == a for p, a in zip(predicted, actual, strict=True))
        / len(actual),
        "binary_f1": 2 * tp / (2 * tp + fp + fn),
        "binary_roc_auc": sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs)
        / len(pairs),
    }


CASES = [
    # (why, values, truth, threshold, logit)
    (
        "probabilities, some at the threshold exactly",
        np.array([0.9, 0.5, 0.49, 0.1, 0.7, 0.5, 0.2, 0.95]),
        np.array([1, 1, 0, 0, 0, 1, 1, 1]),
        0.5,
        False,
    ),
    (
        "ties between the classes count one half in ROC-AUC",
        np.array([0.3, 0.3, 0.3, 0.8, 0.8, 0.1]),
        np.array([1, 0, 0, 1, 0, 1]),
        0.5,
        False,
    ),
    (
        "logits: positive where the sigmoid reaches 0.7",
        np.array([2.0, -1.0, 0.8473, 0.9, -3.0, 40.0, 45.0, -0.2]),
        np.array([1, 0, 1, 1, 0, 0, 1, 1]),
        0.7,
        True,
    ),
    (
        "random probabilities",
        RNG.random(200),
        RNG.integers(0, 2, 200),
        0.35,
        False,
    ),
]


@pytest.mark.parametrize(
    ("values", "truth", "threshold", "logit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_metrics_equal_a_direct_count_and_scikit_learn(
    values: Array, truth: Array, threshold: float, logit: bool
) -> None:
    got, undefined = binary_metrics(values, truth, threshold=threshold, logit=logit, name="p")
    assert not undefined
    expected = direct(values, truth, threshold, logit)
    assert {k: got[k] for k in expected} == pytest.approx(expected, abs=1e-12)
    probability = 1 / (1 + np.exp(-values)) if logit else values
    predicted = (probability >= threshold).astype(int)
    assert got["binary_accuracy"] == pytest.approx(sk.accuracy_score(truth, predicted), abs=1e-12)
    assert got["binary_f1"] == pytest.approx(sk.f1_score(truth, predicted), abs=1e-12)
    assert got["binary_roc_auc"] == pytest.approx(sk.roc_auc_score(truth, values), abs=1e-12)
    assert got["accuracy_samples_count"] == len(truth)


def test_roc_auc_ranks_logits_past_a_sigmoid_s_saturation() -> None:
    """sigmoid(40) and sigmoid(45) are both 1.0 in float64: ranked by their probabilities the
    two would tie; the model's own values keep their order."""
    values, truth = np.array([40.0, 45.0, 38.0]), np.array([0, 1, 0])
    got, _ = binary_metrics(values, truth, threshold=0.5, logit=True, name="p")
    assert got["binary_roc_auc"] == 1.0 == sk.roc_auc_score(truth, values)


UNDEFINED = [
    # (why, values, truth, the metrics left out)
    (
        "no positive in the truth or the predictions",
        [0.1, 0.2],
        [0, 0],
        ["binary_f1", "binary_roc_auc"],
    ),
    ("positives only: ROC-AUC needs both classes", [0.9, 0.2], [1, 1], ["binary_roc_auc"]),
    (
        "negatives only, one predicted positive: F1 is 0, defined",
        [0.9, 0.2],
        [0, 0],
        ["binary_roc_auc"],
    ),
]


@pytest.mark.parametrize(
    ("values", "truth", "left_out"), [c[1:] for c in UNDEFINED], ids=[c[0] for c in UNDEFINED]
)
def test_undefined_f1_and_roc_auc_are_left_out_with_their_reason(
    values: list[float], truth: list[int], left_out: list[str]
) -> None:
    got, undefined = binary_metrics(
        np.array(values), np.array(truth), threshold=0.5, logit=False, name="p"
    )
    assert sorted(undefined) == left_out and not set(left_out) & set(got)
    right = [(v >= 0.5) == (t == 1) for v, t in zip(values, truth, strict=True)]
    assert got["binary_accuracy"] == sum(right) / len(right)
    if "binary_f1" in got:
        assert got["binary_f1"] == sk.f1_score(truth, [int(v >= 0.5) for v in values])
    with pytest.raises(UndefinedMetric, match="no sample was scored"):
        binary_metrics(
            np.zeros(0), np.zeros(0, dtype=np.int64), threshold=0.5, logit=False, name="p"
        )


@pytest.mark.parametrize(
    ("shape", "accepted"),
    [((4,), True), ((4, 1), True), ((4, 1, 1), True), ((4, 2), False), ((4, 3, 1), False)],
)
def test_only_one_value_per_sample_is_a_binary_output(
    shape: tuple[int, ...], accepted: bool
) -> None:
    values = np.linspace(0, 1, int(np.prod(shape))).reshape(shape)
    if accepted:
        assert one_value_per_sample(values, name="p", batch=4).shape == (4,)
        return
    with pytest.raises(
        NotOneValuePerSample, match=rf"'p' has shape {list(shape)}".replace("[", r"\[")
    ):
        one_value_per_sample(values, name="p", batch=4)


def test_a_value_that_is_not_what_its_form_says_is_refused() -> None:
    with pytest.raises(NotProbabilities, match=r"the value 2\.5 is not a probability"):
        binary_metrics(np.array([0.5, 2.5]), np.array([0, 1]), threshold=0.5, logit=False, name="p")
    with pytest.raises(NotProbabilities, match="the value nan is not a finite logit"):
        binary_metrics(
            np.array([0.5, np.nan]), np.array([0, 1]), threshold=0.5, logit=True, name="p"
        )


# ---------------------------------------------------------------- end to end


def trained(catalog: Path) -> tuple[Array, Array]:
    """The digits catalog's logistic regression 1.0.0, ``W`` and ``b`` as its ONNX file
    holds them (the catalog is built once per test run; training again takes seconds)."""
    import onnx
    from onnx import numpy_helper

    path = catalog / "digits-logreg-1.0.0" / "digits-logreg.onnx"
    found = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    return found["W"], found["b"]


def eight_detector(weights: Array, bias: Array, logit: bool) -> bytes:
    """The digits logistic regression as a one-output "is it an eight?" classifier: the
    class-8 logit less the best other one, through a sigmoid unless ``logit``: ``(N, 1)``."""
    from onnx import TensorProto, helper, numpy_helper

    consts = {"start": [0], "eight": [8], "nine": [9], "ten": [10], "axis": [1]}
    nodes = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "W", "b"], ["logits"], transB=1),
        helper.make_node("Slice", ["logits", "eight", "nine", "axis"], ["eighth"]),
        helper.make_node("Slice", ["logits", "start", "eight", "axis"], ["below"]),
        helper.make_node("Slice", ["logits", "nine", "ten", "axis"], ["above"]),
        helper.make_node("Concat", ["below", "above"], ["others"], axis=1),
        helper.make_node("ReduceMax", ["others", "axis"], ["best"], keepdims=1),
        helper.make_node("Sub", ["eighth", "best"], ["margin" if not logit else "p"]),
    ]
    if not logit:
        nodes.append(helper.make_node("Sigmoid", ["margin"], ["p"]))
    graph = helper.make_graph(
        nodes,
        "eight",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 1])],
        initializer=[
            numpy_helper.from_array(weights.astype(np.float32), "W"),
            numpy_helper.from_array(bias.astype(np.float32), "b"),
            *(numpy_helper.from_array(np.array(v, np.int64), k) for k, v in consts.items()),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def quiet(text: str) -> None:
    pass


def test_an_eight_detector_scores_as_the_reference_in_both_forms(
    digits: Workspace, catalog_dir: Path, tmp_path: Path
) -> None:
    _, x_test, _, y_test = builtin.digits_split()
    eight = (y_test == 8).astype(np.int64)
    arrays = {}
    for name, array in (("images.npy", x_test), ("labels.npy", eight)):
        np.save(tmp_path / name, array, allow_pickle=False)
        arrays[name] = (tmp_path / name).read_bytes()
    dataset = {
        "kind": "dataset", "name": "digits-eight", "version": "1.0.0",
        "data": {"format": "npy", "path": "images.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": 2},
        "files": write_files(tmp_path / "data", arrays),
    }  # fmt: skip
    publish(digits, parse_manifest(dataset), manifest_dir=tmp_path / "data", publisher="test")
    weights, bias = trained(catalog_dir)
    logits = (x_test.reshape(len(x_test), -1).astype(np.float32) / 16.0) @ weights.T + bias
    margin = logits[:, 8] - np.delete(logits, 8, axis=1).max(axis=1)

    # the logit export (the probability form is the same reading less the sigmoid: above)
    model = publish_digits_model(
        digits,
        tmp_path / "8.1.0",
        "8.1.0",
        {"m.onnx": eight_detector(weights, bias, logit=True)},
        inputs=[{**X, "steps": STEPS}],
        outputs=[{"name": "p", "type": "binary", "binary": {"threshold": 0.6, "form": "logit"}}],
    )
    request = {"model": model, "dataset": "digits-eight@1", "scenario": {"mode": "accuracy"}}
    run_lockfile(digits, service.lock(digits, parse_request(request))[0], say=quiet)
    run = list_runs(digits)[0]
    assert run["status"] == "succeeded", run.get("error")
    expected = direct(margin, eight, 0.6, True)
    assert {k: run[k] for k in expected} == pytest.approx(expected, abs=1e-6)
    predicted = ((1 / (1 + np.exp(-margin))) >= 0.6).astype(int)
    assert run["binary_f1"] == pytest.approx(sk.f1_score(eight, predicted), abs=1e-6)
    assert run["binary_roc_auc"] == pytest.approx(sk.roc_auc_score(eight, margin), abs=1e-6)
    assert 0.9 < run["binary_accuracy"] < 1.0 and 0.5 < run["binary_f1"] < 1.0
    assert run["accuracy_samples_count"] == len(eight)
    details = show_run(digits, run["id"])["details"]
    rows = details["samples"]
    assert [r["top1"] for r in rows] == predicted[: len(rows)].tolist()
    assert details["binary"] == {"threshold": 0.6, "form": "logit", "positive_class": 1}

    # the same model on the ten-class digits dataset: refused before anything is timed
    request = {
        "model": model,
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": {"mode": "accuracy"},
    }
    with pytest.raises(NotTwoClasses, match="'p' scores class 1 against class 0 but dataset"):
        run_lockfile(digits, service.lock(digits, parse_request(request))[0], say=quiet)
    failed = list_runs(digits)[0]
    assert failed["status"] == "failed" and "declares 10 classes" in failed["error"]
    assert "binary_accuracy" not in failed and "latency_p50_ns" not in failed


def test_parity_compares_each_runs_predicted_classes_by_its_own_form() -> None:
    """A probability export and a logit export of one model: their values differ, their
    classes (each read by its own form and threshold) agree; a flipped sample disagrees."""
    from pinbench.tasks import registry
    from tests.test_parity import _record

    margin = RNG.normal(size=40)
    probability = 1 / (1 + np.exp(-margin))

    def recorded(values: Array, binary: dict[str, Any]) -> Any:
        return _record(
            "classification",
            values[:, None],
            model_outputs=[{"name": "out", "type": "binary", "binary": binary}],
        )

    reference = recorded(probability, {"threshold": 0.5})
    logit = recorded(margin, {"threshold": 0.5, "form": "logit"})
    found = registry.task("classification").parity(reference, logit)
    figures = {f.name: f.value for f in found.figures}
    assert found.agrees and figures["class_agree"] == figures["samples"] == 40
    flipped = margin.copy()
    flipped[3] = -flipped[3]
    other = registry.task("classification").parity(
        reference, recorded(flipped, {"threshold": 0.5, "form": "logit"})
    )
    assert not other.agrees and {f.name: f.value for f in other.figures}["class_agree"] == 39
