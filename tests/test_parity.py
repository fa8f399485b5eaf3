"""Parity and reruns per task. ``runs parity`` compares what each task scores
(``Task.parity``), not raw tensors: each comparison's figures against a direct NumPy
computation on made-up records (real runs: ``test_run.py``, classification through the digits
catalog). ``rerun`` judges the exact metrics of the run's own task."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.verdicts.parity import Parity
from pinbench.evaluator.verdicts.rerun import rerun
from pinbench.registry import service
from pinbench.registry.lockfile import LockedDataset, LockedModel
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.tasks import registry
from pinbench.tasks.base import Answer, Array, Context, Metric, Scored, Scorer
from pinbench.tasks.detection.score import DETAIL_LIMIT
from pinbench.tasks.parity import Incomparable, Recorded, raw_parity
from tests.helpers import published_workspace
from tests.test_task_plugin import Regression, ValueScorer, _sum_model, _values_dataset, quiet

RNG = np.random.default_rng(35)


def _record(
    task: str,
    outputs: Any = (),
    *,
    metrics: dict[str, float] | None = None,
    details: dict[str, Any] | None = None,
    model_outputs: list[dict[str, Any]] | None = None,
    run: str = "r" * 32,
) -> Recorded:
    chosen = registry.task(task)
    labels: dict[str, Any] = {"format": chosen.label_formats[0], "path": "labels"}
    if task == "segmentation":
        labels["classes"] = 3
    dataset = {
        "name": "d",
        "version": "1.0.0",
        "manifest_digest": "0" * 64,
        "task": task,
        "samples": None,
        "labels": labels,
        "data": {"format": "images", "path": "images"} if chosen.by_file_name else None,
    }
    model = {
        "name": "m",
        "version": "1.0.0",
        "format": "onnx",
        "architecture": None,
        "trusted": False,
        "inputs": [],
        "outputs": model_outputs or [{"name": "out"}],
    }
    return Recorded(
        run=run,
        outputs=np.asarray(outputs),
        outputs_name="out",
        metrics=metrics or {},
        details=details or {},
        model=msgspec.convert(model, LockedModel),
        dataset=msgspec.convert(dataset, LockedDataset),
    )


def _parity(task: str, reference: Recorded, other: Recorded) -> dict[str, float]:
    found = registry.task(task).parity(reference, other)
    return {f.name: f.value for f in found.figures} | {"agrees": found.agrees}


def test_classification_counts_the_samples_of_the_same_top1_and_the_score_differences() -> None:
    ref = RNG.normal(size=(8, 5))
    other = ref + RNG.normal(scale=1e-3, size=ref.shape)
    other[[1, 4]] = other[[1, 4]][:, ::-1]  # two samples rank another class first
    ref[6] = [2.0, 0.0, 2.0, 0.0, 0.0]  # a tie: the lowest index, as scoring ranks it
    other[6] = ref[6]
    got = _parity(
        "classification", _record("classification", ref), _record("classification", other)
    )
    rel = np.abs(other - ref) / np.maximum(np.abs(ref), 1e-3 * np.abs(ref).max())
    assert got == {
        "top1_agree": float(np.sum(ref.argmax(axis=1) == other.argmax(axis=1))),
        "samples": 8.0,
        "max_abs_diff": pytest.approx(np.abs(other - ref).max(), rel=1e-12),
        "max_rel_diff": pytest.approx(rel.max(), rel=1e-12),
        "agrees": False,
    }
    same = _parity("classification", _record("classification", ref), _record("classification", ref))
    assert same["top1_agree"] == 8 and same["agrees"]


def test_similarity_gives_each_samples_cosine_and_how_far_spearman_moved() -> None:
    ref = RNG.normal(size=(6, 4))
    other = ref + RNG.normal(scale=0.05, size=ref.shape)
    cos = np.sum(ref * other, axis=1) / (
        np.linalg.norm(ref, axis=1) * np.linalg.norm(other, axis=1)
    )
    task = "sentence-similarity"
    got = _parity(
        task,
        _record(task, ref, metrics={"spearman": 0.80}),
        _record(task, other, metrics={"spearman": 0.75}),
    )
    assert got == {
        "min_cosine": pytest.approx(cos.min(), rel=1e-12),
        "mean_cosine": pytest.approx(cos.mean(), rel=1e-12),
        "spearman_diff": pytest.approx(0.05, rel=1e-9),
        "samples": 6.0,
        "agrees": False,
    }
    assert _parity(
        task,
        _record(task, ref, metrics={"spearman": 0.8}),
        _record(task, ref * 2.0, metrics={"spearman": 0.8}),
    )["agrees"], "a scaled embedding points the same way"


def _box(cat: float, score: float, x: float, y: float, w: float, h: float) -> list[float]:
    return [cat, score, x, y, w, h]


def _iou(a: list[float], b: list[float]) -> float:
    ax2, ay2, bx2, by2 = a[2] + a[4], a[3] + a[5], b[2] + b[4], b[3] + b[5]
    w = max(0.0, min(ax2, bx2) - max(a[2], b[2]))
    h = max(0.0, min(ay2, by2) - max(a[3], b[3]))
    return w * h / (a[4] * a[5] + b[4] * b[5] - w * h)


def test_detection_matches_boxes_of_one_class_at_iou_099_and_counts_the_rest() -> None:
    near = _box(1, 0.9004, 10.05, 10.0, 100.0, 50.0)  # moved 0.05 px: IoU > 0.99
    far = _box(1, 0.7, 52.0, 50.0, 40.0, 40.0)  # moved 2 px: IoU < 0.99
    ref_far = _box(1, 0.7, 50.0, 50.0, 40.0, 40.0)
    assert _iou(near, _box(1, 0.9, 10, 10, 100, 50)) >= 0.99 > _iou(far, ref_far)
    empty = _box(4, 0.3, 7, 7, 0, 0)  # no area, so no IoU: the same box matches
    reference = [
        [_box(1, 0.9, 10, 10, 100, 50), ref_far, _box(2, 0.6, 0, 0, 5, 5)],
        [empty],
    ]
    other = [
        [near, far, _box(3, 0.6, 0, 0, 5, 5)],  # the last: the same box, another class
        [_box(1, 0.5, 1, 1, 2, 2), empty],
    ]
    got = _parity(
        "detection",
        _record("detection", details={"detections": reference}),
        _record("detection", details={"detections": other}),
    )
    assert got == {
        "matched": 2.0,
        "only_reference": 2.0,
        "only_this": 3.0,
        "max_score_diff": pytest.approx(0.0004, abs=1e-12),
        "unchecked": 0.0,
        "images": 2.0,
        "agrees": False,
    }


def test_detection_boxes_past_the_other_runs_recorded_ones_are_unchecked_not_unmatched() -> None:
    """Only the first ``DETAIL_LIMIT`` detections per image are recorded: a box scored no
    higher than the other run's last recorded one may be in its unrecorded rest."""
    full = [_box(1, 0.9 - i * 0.001, i * 10.0, 0, 5, 5) for i in range(DETAIL_LIMIT)]
    low = _box(1, full[-1][1] - 0.01, 5000, 0, 5, 5)  # ranked past the other's record
    high = _box(1, 0.95, 9000, 0, 5, 5)  # would be recorded: truly unmatched
    got = _parity(
        "detection",
        _record("detection", details={"detections": [[*full[:-2], high, low]]}),
        _record("detection", details={"detections": [full]}),
    )
    assert (got["matched"], got["only_reference"], got["unchecked"]) == (DETAIL_LIMIT - 2, 1, 1)
    assert got["only_this"] == 2 and not got["agrees"]


def test_segmentation_compares_class_maps_however_each_export_gives_them() -> None:
    """The reference gives logits, the other the argmax (classes): each is read per its own
    model's section, and the share of pixels of the same class is counted."""
    logits = RNG.normal(size=(2, 3, 4, 5)).astype(np.float32)
    classes = logits.argmax(axis=1).astype(np.int64)
    classes[0, 1, 2] = (classes[0, 1, 2] + 1) % 3
    classes[1, 3, :] = (classes[1, 3, :] + 2) % 3
    section = {"name": "out", "type": "segmentation"}
    ref = _record(
        "segmentation", logits, model_outputs=[{**section, "segmentation": {"form": "logits"}}]
    )
    other = _record(
        "segmentation", classes, model_outputs=[{**section, "segmentation": {"form": "classes"}}]
    )
    same = logits.argmax(axis=1) == classes
    assert _parity("segmentation", ref, other) == {
        "pixels_agree": pytest.approx(same.mean(), rel=1e-12),
        "samples_agree": 0.0,
        "samples": 2.0,
        "pixels": 40.0,
        "agrees": False,
    }
    assert _parity("segmentation", ref, ref)["pixels_agree"] == 1.0


def test_a_task_without_its_own_parity_compares_raw_outputs() -> None:
    ref = RNG.normal(size=(4, 3))
    other = ref * (1 + 1e-4)
    found = raw_parity(_record("classification", ref), _record("classification", other))
    assert found.figure("max_abs_diff") == pytest.approx(np.abs(other - ref).max(), rel=1e-12)
    assert found.figure("max_rel_diff") == pytest.approx(1e-4, rel=1e-6) and found.agrees
    other[1, 2] = np.inf  # differs by infinitely much; --json says null, not Infinity
    found = raw_parity(_record("classification", ref), _record("classification", other))
    assert found.figure("max_rel_diff") == np.inf and not found.agrees
    row = Parity(run="r", framework="f", model="m", task="t", agreement=found)
    assert json.loads(json.dumps(row.to_json(), allow_nan=False))["figures"]["max_abs_diff"] is None


@pytest.mark.parametrize(
    ("task", "reference", "other", "needle"),
    [
        # (task, reference outputs, other outputs, what the error names)
        ("classification", np.zeros((3, 4)), np.zeros((2, 4)), "recorded 2 samples"),
        ("classification", np.zeros((3, 4)), np.zeros((3, 5)), "scores 5 classes"),
        ("sentence-similarity", np.zeros((2, 4)), np.zeros((2, 3)), "embeddings of 3 values"),
    ],
)
def test_records_that_cannot_be_compared_are_refused_naming_why(
    task: str, reference: Any, other: Any, needle: str
) -> None:
    with pytest.raises(Incomparable, match=needle):
        registry.task(task).parity(_record(task, reference), _record(task, other))


# ---------------------------------------------------------------- reruns ask the run's task


class Sampled(Regression):
    """A task whose ``recall`` is sampled, so a rerun need not reproduce it, where the
    detection task's ``recall`` must be reproduced exactly."""

    name = "sampled"
    metrics = (
        Metric("mae", "MAE", unit="value", higher_is_better=False, headline=True),
        Metric("recall", "sampled recall", exact=False),
    )
    draws = itertools.count()

    def prepare(self, context: Context) -> Scorer | None:
        scorer = super().prepare(context)
        assert isinstance(scorer, ValueScorer)
        return SampledScorer(scorer.outputs[0], context)


class SampledScorer(ValueScorer):
    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        scored = super().score(answers, arrays)
        scored.metrics["recall"] = 1.0 / (2 + next(Sampled.draws))  # another each run
        return scored


def test_a_rerun_reproduces_the_exact_metrics_of_the_runs_own_task(
    tmp_path: Path, catalog_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry.TASKS, "sampled", f"{__name__}:Sampled")
    registry.task.cache_clear()
    x = RNG.normal(size=(6, 2, 2, 1)).astype(np.float32)
    ws = published_workspace(tmp_path, catalog_dir)
    try:
        dataset = {**_values_dataset(tmp_path / "d", x, x.sum(axis=(1, 2, 3))), "task": "sampled"}
        for doc, root in ((_sum_model(tmp_path / "m"), "m"), (dataset, "d")):
            publish(ws, parse_manifest(doc), manifest_dir=tmp_path / root, publisher="test")
        request = {"model": "example/sum@1", "dataset": "example/values@1"}
        lock = service.lock(ws, parse_request({**request, "scenario": {"mode": "accuracy"}}))[0]
        # in this process (--sandbox none): the task is this module's, registered here alone
        original = run_lockfile(ws, lock, say=quiet, sandbox="none")
        verdict = rerun(ws, original.id, say=quiet, sandbox="none")
        assert (
            show_run(ws, verdict.reruns[0]["id"])["recall"] != show_run(ws, original.id)["recall"]
        )
        assert verdict.reproduced, verdict.lines
        assert verdict.lines[1].startswith("accuracy identical (MAE ")
    finally:
        ws.close()
        registry.task.cache_clear()
