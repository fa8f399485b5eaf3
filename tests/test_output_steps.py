"""Every output step a manifest declares is applied by the task that reads the output, or
refused naming the step and the task (decision 170): a classifier's ``argsort: {descending:
false}`` ranks the lowest score first, its ``topk`` keeps that many classes, its softmax goes
along the class axis; steps no task applies are refused at publish and again before a run.
Classes are ranked exactly in the scores' own type: int64 scores past 2**53 keep their order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from sklearn.metrics import top_k_accuracy_score

from pinbench import catalog as builtin
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.registry.output_steps import OutputStepRefused, check_output_steps
from pinbench.registry.ports import Output
from pinbench.registry.steps import OutputStep, TopK
from pinbench.tasks import registry
from pinbench.tasks.classification.ranking import Ranking, SoftmaxAxis, check_softmax_axes
from pinbench.tasks.classification.scores import classification_metrics
from pinbench.worker.postprocess import postprocess, ranked
from pinbench.workspace import Workspace
from tests.helpers import (
    Cli,
    Home,
    digits_logreg,
    in_process_cli,
    publish_digits_model,
    published_home,
)
from tests.test_class_scores import STEPS, X, _lock, _model
from tests.test_parity import _record

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(47)
BIG = 2**53  # float64 has 53 bits of mantissa: BIG and BIG + 1 are one float64


def _by_hand(scores: Array, *, descending: bool) -> Array:
    """Each row's class indices by sorting in Python's integers/floats: ties, lower index."""
    sign = -1 if descending else 1
    return np.array(
        [sorted(range(len(row)), key=lambda c: (sign * row[c].item(), c)) for row in scores]
    )


# --- ranking, exactly ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint64, np.int8, bool])
@pytest.mark.parametrize("descending", [True, False])
def test_ranking_equals_a_sort_by_hand_with_ties_in_every_type(
    dtype: type[np.generic], descending: bool
) -> None:
    scores = RNG.integers(0, 4, size=(40, 7)).astype(dtype)  # many ties
    assert np.array_equal(
        ranked(scores, descending=descending), _by_hand(scores, descending=descending)
    )


def test_int64_scores_past_2_53_rank_as_numpy_argmax_and_argsort_say() -> None:
    """A float64 cast made BIG and BIG + 1 equal: top-1 0 where argmax says 1."""
    low = np.iinfo(np.int64).min  # negating it to sort descending would overflow
    scores = np.array(
        [
            [BIG, BIG + 1, 0, 1, 2],
            [BIG + 3, BIG + 2, BIG + 1, BIG, low],
            [low, 2**62, 2**62 + 1, 2**62 - 1, -1],
        ],
        dtype=np.int64,
    )
    truth = np.argmax(scores, axis=1)
    assert truth.tolist() == [1, 0, 2]
    metrics = classification_metrics(scores, truth)
    assert metrics["top1"] == 1.0
    assert np.array_equal(ranked(scores), np.argsort(scores, axis=1, kind="stable")[:, ::-1])
    lowest = classification_metrics(scores, np.argmin(scores, axis=1), ranking=Ranking(False))
    assert lowest["top1"] == 1.0
    # the same scores top-5 ranked against NumPy's own argsort of the int64 values
    fifth = np.argsort(scores, axis=1, kind="stable")[:, 0]  # each row's lowest: ranked 5th
    assert classification_metrics(scores, fifth)["top5"] == 1.0
    assert np.array_equal(postprocess(scores, [OutputStep(topk=TopK(k=2))]), ranked(scores)[:, :2])


@pytest.mark.parametrize("descending", [True, False])
def test_top1_and_top5_equal_scikit_learn_in_either_direction(descending: bool) -> None:
    scores = RNG.normal(size=(200, 12))  # no ties: scikit-learn breaks them otherwise
    truth = RNG.integers(0, 12, size=200)
    metrics = classification_metrics(scores, truth, ranking=Ranking(descending))
    sign = 1 if descending else -1  # lowest first is highest first of the negated scores
    for k in (1, 5):
        want = top_k_accuracy_score(truth, sign * scores, k=k, labels=np.arange(12))
        assert metrics[f"top{k}"] == pytest.approx(want, abs=1e-15)


def test_a_topk_of_fewer_than_five_leaves_top5_out() -> None:
    scores, truth = RNG.normal(size=(20, 10)), RNG.integers(0, 10, size=20)
    assert "top5" not in classification_metrics(scores, truth, ranking=Ranking(keep=3))
    assert "top5" in classification_metrics(scores, truth, ranking=Ranking(keep=5))


def test_parity_ranks_each_run_as_its_output_declares() -> None:
    lowest = [
        {"name": "out", "type": "classification", "steps": [{"argsort": {"descending": False}}]}
    ]
    ref = np.array([[BIG, BIG + 1, 5], [1, 2, 3]], dtype=np.int64)
    other = np.array([[BIG + 1, BIG, 5], [1, 3, 2]], dtype=np.int64)
    plain = registry.task("classification").parity(
        _record("classification", ref), _record("classification", other)
    )
    assert {f.name: f.value for f in plain.figures}["top1_agree"] == 0.0  # 1 vs 0, 2 vs 1
    low = registry.task("classification").parity(
        _record("classification", ref, model_outputs=lowest),
        _record("classification", other, model_outputs=lowest),
    )
    assert {f.name: f.value for f in low.figures}["top1_agree"] == 2.0  # 2 and 0 both times


# --- which steps each output type applies ------------------------------------------------------

SECTIONS: dict[str, dict[str, Any]] = {
    "classification": {},
    "tensor": {},
    "embedding": {},
    "detection": {"detection": {"layout": "yolov8"}},
    "segmentation": {"segmentation": {"form": "logits"}},
    "text": {"ctc": {"blank": 0, "alphabet": {"file": "a.txt"}}},
    "binary": {},
    "generation": {},
}
ALL_STEPS = {
    "softmax": {},
    "argsort": {"descending": False},
    "topk": {"k": 3},
    "pool": {"mode": "cls"},
    "l2_normalize": {},
}
APPLIED = {
    "classification": {"softmax", "argsort", "topk"},
    "embedding": set(ALL_STEPS),
}
WHO = {
    "classification": "the classification task",
    "tensor": "no task",
    "embedding": "the sentence-similarity task",
    "detection": "the detection task",
    "segmentation": "the segmentation task",
    "text": "the text-recognition task",
    "binary": "the voice-activity task",
    "generation": "the text-generation task",
}


def _output(kind: str, steps: list[dict[str, Any]]) -> Output:
    return msgspec.convert({"name": "o", "type": kind, "steps": steps, **SECTIONS[kind]}, Output)


@pytest.mark.parametrize("kind", list(SECTIONS))
@pytest.mark.parametrize("step", list(ALL_STEPS))
def test_each_step_is_applied_by_its_outputs_task_or_refused_naming_both(
    kind: str, step: str
) -> None:
    output = _output(kind, [{step: ALL_STEPS[step]}])
    if step in APPLIED.get(kind, set()):
        check_output_steps([output])
        return
    with pytest.raises(OutputStepRefused) as caught:
        check_output_steps([output])
    message = str(caught.value)
    assert f"output 'o' (type {kind}) declares a `{step}` step, which is not applied" in message
    assert WHO[kind] in message and "at `$.outputs[0].steps[0]`" in message


@pytest.mark.parametrize(
    "steps",
    [
        [{"topk": {"k": 5}}, {"softmax": {}}],
        [{"argsort": {}}, {"topk": {"k": 5}}],
        [{"topk": {"k": 5}}, {"topk": {"k": 1}}],
    ],
    ids=["softmax of indices", "topk of indices", "two topk"],
)
def test_a_classification_step_after_argsort_or_topk_is_refused(
    steps: list[dict[str, Any]],
) -> None:
    with pytest.raises(OutputStepRefused, match=r"gives class indices, not scores") as caught:
        check_output_steps([_output("classification", steps)])
    assert caught.value.at == "$.outputs[0].steps[1]"


# --- through publish and runs ------------------------------------------------------------------


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Home]:
    with published_home(tmp_path_factory.mktemp("output-steps"), catalog_dir) as home:
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _publish(ws: Workspace, root: Path, version: str, steps: list[dict[str, Any]]) -> str:
    """The digits logistic regression (logits ``(N, 10)``) with these output steps."""
    return publish_digits_model(
        ws,
        root / version,
        version,
        {"m.onnx": _model("reshape:-1,10")},
        inputs=[{**X, "steps": STEPS}],
        outputs=[{"name": "out", "type": "classification", "steps": steps}],
    )


def _logits() -> tuple[Array, Array]:
    """The model's logits on the digits test split (as ``tests/test_class_scores`` computes
    them) and the labels."""
    _, x_test, _, y_test = builtin.digits_split()
    weights, bias = digits_logreg()
    logits = (x_test.reshape(len(x_test), -1).astype(np.float32) / 16.0) @ weights.T + bias
    return logits, y_test


def _run(ws: Workspace, model: str, mode: str = "accuracy") -> dict[str, Any]:
    run_lockfile(ws, _lock(ws, model, mode), say=quiet)
    return list_runs(ws, 1, nested=True)[0]


def test_argsort_ascending_scores_the_lowest_score_as_the_prediction(
    home: Home, tmp_path: Path
) -> None:
    """The issue's case: this classifier was scored highest-wins (top-1 0.11 for 0.093)."""
    model = _publish(home.ws, tmp_path, "8.0.0", [{"argsort": {"descending": False}}])
    run = _run(home.ws, model)
    assert run["status"] == "succeeded", run["error"]
    logits, truth = _logits()
    lowest = np.argmin(logits, axis=1)
    assert run["metrics"]["top1"] == pytest.approx(np.mean(lowest == truth), abs=1e-12)
    assert run["metrics"]["top1"] == pytest.approx(
        top_k_accuracy_score(truth, -logits, k=1, labels=np.arange(10)), abs=1e-12
    )
    assert run["metrics"]["top5"] == pytest.approx(
        top_k_accuracy_score(truth, -logits, k=5, labels=np.arange(10)), abs=1e-12
    )
    assert run["metrics"]["top1"] < 0.5 < np.mean(np.argmax(logits, axis=1) == truth)
    from pinbench.evaluator.records.run_view import show_run

    rows = show_run(home.ws, run["id"])["details"]["samples"]
    assert [r["top1"] for r in rows] == lowest[: len(rows)].tolist()  # as the metric ranks


def test_softmax_and_topk_three_keep_top1_and_leave_top5_out(home: Home, tmp_path: Path) -> None:
    model = _publish(home.ws, tmp_path, "8.1.0", [{"softmax": {}}, {"topk": {"k": 3}}])
    run = _run(home.ws, model)
    assert run["status"] == "succeeded", run["error"]
    logits, truth = _logits()
    assert run["metrics"]["top1"] == pytest.approx(
        np.mean(np.argmax(logits, axis=1) == truth), abs=1e-12
    )
    assert "top5" not in run["metrics"]  # three classes kept: top-5 is not defined


def test_a_softmax_across_the_batch_fails_the_run_before_timing(home: Home, tmp_path: Path) -> None:
    model = _publish(home.ws, tmp_path, "8.2.0", [{"softmax": {"axis": 0}}])
    for mode in ("accuracy", "performance"):  # a declared step is honoured or refused
        with pytest.raises(EvaluationFailed, match=r"axis 0 holds the samples"):
            run_lockfile(home.ws, _lock(home.ws, model, mode), say=quiet)  # in its sandbox
        run = list_runs(home.ws, 1, nested=True)[0]
        assert run["status"] == "failed" and "`softmax: {axis: 0}`" in run["error"]
        assert "top1" not in run["metrics"] and "latency_p50_ns" not in run["metrics"]


# (output shape, softmax axis, refused because, or None: along the classes)
AXES = [
    ((4, 10), -1, None),
    ((4, 10), 1, None),
    ((4, 10), -2, "axis 0 holds the samples"),
    ((4, 1, 10), -1, None),
    ((4, 1, 10), 1, "that axis has length 1; the classes are on axis 2"),
    ((4, 10, 1, 1), 1, None),
    ((4, 10, 1, 1), -1, "that axis has length 1; the classes are on axis 1"),
    ((4, 1), -1, None),  # one class: every axis past the samples is it
    ((4, 10), 2, "the output has 2 axes"),
]


@pytest.mark.parametrize(("shape", "axis", "refused"), AXES)
def test_softmax_goes_along_the_class_axis(
    shape: tuple[int, ...], axis: int, refused: str | None
) -> None:
    ranking = Ranking(softmax_axes=(axis,))
    if refused is None:
        check_softmax_axes(ranking, shape, name="out")
        return
    with pytest.raises(SoftmaxAxis, match=refused) as caught:
        check_softmax_axes(ranking, shape, name="out")
    assert f"'out' of shape {list(shape)} declares `softmax: {{axis: {axis}}}`" in str(caught.value)


def test_publish_refuses_a_step_no_task_applies(cli: Cli, home: Home, tmp_path: Path) -> None:
    from tests.helpers import dump, model_manifest, write_files

    files = write_files(tmp_path, {"m.onnx": _model("reshape:-1,10")})
    manifest = model_manifest(builtin.MODEL_NAME, "8.3.0", files, framework_range="^1")
    manifest["inputs"] = [{**X, "steps": STEPS}]
    manifest["outputs"] = [
        {"name": "out", "type": "classification", "steps": [{"pool": {"mode": "cls"}}]}
    ]
    result = cli("publish", str(dump(tmp_path / "model.yaml", manifest)))
    assert result.code == 1 and "Traceback" not in result.err
    assert "output 'out' (type classification) declares a `pool` step" in result.err
    assert "pool is not among them" in result.err and "$.outputs[0].steps[0]" in result.err
    assert "8.3.0" not in cli("list", "model").out


def test_a_manifest_stored_before_the_rule_is_refused_at_the_run(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Publishing without the check stands for a manifest published by an earlier pinbench:
    the run refuses it before anything is timed, rather than read it otherwise than it says."""
    import pinbench.registry.supported as supported

    with monkeypatch.context() as patched:
        patched.setattr(supported, "check_output_steps", lambda outputs: None)
        model = _publish(home.ws, tmp_path, "8.4.0", [{"l2_normalize": {}}])
    with pytest.raises(EvaluationFailed, match=r"declares a `l2_normalize` step"):
        run_lockfile(home.ws, _lock(home.ws, model, "performance"), say=quiet)  # the worker's
    run = list_runs(home.ws, 1, nested=True)[0]
    assert run["status"] == "failed" and "latency_p50_ns" not in run["metrics"]
