"""An undefined metric is never recorded as a number (decision 115): per task, the inputs
that would leave a metric without a value are refused where they are first seen (the ground
truth at publish, the outputs at scoring), and a value the scoring library reports as
undefined fails the run. Metric values are checked against direct computations here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.tasks.detection.coco import (
    _evaluate,
    coco_metrics,
    validate_ground_truth,
)
from pinbench.tasks.detection.errors import BadGroundTruth
from pinbench.tasks.detection.stats import STATS
from pinbench.tasks.detection.truth import read_ground_truth
from pinbench.tasks.segmentation.metrics import Confusion
from pinbench.tasks.similarity.pairs import Pairs, SimilarityError, similarity_metrics, spearman
from pinbench.worker.labels import LabelProblem
from pinbench.worker.undefined import UndefinedMetric

# --- detection (COCO) ------------------------------------------------------------------------


def coco(*annotations: dict[str, Any]) -> dict[str, Any]:
    """One 100 x 100 image, one category; each annotation a box of category 1 on it."""
    return {
        "images": [{"id": 1, "width": 100, "height": 100, "file_name": "a.png"}],
        "categories": [{"id": 1, "name": "face"}],
        "annotations": [
            {"id": i, "image_id": 1, "category_id": 1, "bbox": [10, 10, 10, 10], **a}
            for i, a in enumerate(annotations, start=1)
        ],
    }


def det(box: list[float], score: float = 0.9) -> dict[str, Any]:
    return {"image_id": 1, "category_id": 1, "bbox": box, "score": score}


# (why, annotations, the reason's words). pycocotools counts an annotation when it is not
# iscrowd and its area lies in 0..1e10; with none counted every metric is -1 (undefined), and
# a value it cannot compare is a TypeError mid-evaluation.
UNDEFINED_OR_MISREAD = [
    ("every annotation a crowd", [{"iscrowd": 1}, {"iscrowd": 1}], "every one is iscrowd: 1"),
    ("an area that is text", [{"area": "big"}], "area must be a number from 0 to the image's"),
    ("a negative area", [{"area": -5}], "got -5"),
    ("an area past pycocotools' range", [{"area": 1e12}], "got 1000000000000.0"),
    ("an area larger than its image", [{"area": 10001}], "100 x 100 pixels, got 10001"),
    ("an area that is NaN", [{"area": math.nan}], "got nan"),
    ("an area that is a boolean", [{"area": True}], "got True"),
    ("iscrowd true (a boolean)", [{"iscrowd": True}], "iscrowd must be 0 or 1, got True"),
    ("iscrowd a fraction", [{"iscrowd": 0.5}], "iscrowd must be 0 or 1, got 0.5"),
    ("iscrowd as text", [{"iscrowd": "0"}], "iscrowd must be 0 or 1, got '0'"),
    ("an image id that is a boolean", [{"image_id": True}], "unknown image_id True"),
    ("a category id that is a boolean", [{"category_id": True}], "unknown category_id True"),
]


@pytest.mark.parametrize(
    ("annotations", "message"),
    [c[1:] for c in UNDEFINED_OR_MISREAD],
    ids=[c[0] for c in UNDEFINED_OR_MISREAD],
)
def test_ground_truth_that_leaves_a_metric_undefined_is_refused(
    annotations: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(BadGroundTruth) as caught:
        coco_metrics(coco(*annotations), [det([10, 10, 10, 10])])
    assert message in str(caught.value)


# (why, annotations, detections, (map, map50, recall) worked out by hand)
DEFINED = [
    # An area of 0 is inside pycocotools' range [0, 1e10]: the object counts and is found.
    ("an area of 0 counts", [{"area": 0}], [det([10, 10, 10, 10])], (1.0, 1.0, 1.0)),
    ("an area of the whole image counts", [{"area": 10000}], [det([10, 10, 10, 10])], (1, 1, 1)),
    # A crowd region only excuses the detections that fall on it: the one object is found
    # first-ranked, the detection on the crowd neither helps nor hurts.
    (
        "a crowd excuses a detection",
        [{}, {"iscrowd": 1, "bbox": [50, 50, 30, 30]}],
        [det([10, 10, 10, 10], 0.5), det([50, 50, 30, 30], 0.9)],
        (1.0, 1.0, 1.0),
    ),
    # No detection at all is defined: nothing is found, every metric is 0.
    ("no detections", [{}], [], (0.0, 0.0, 0.0)),
]


@pytest.mark.parametrize(
    ("annotations", "detections", "expected"),
    [c[1:] for c in DEFINED],
    ids=[c[0] for c in DEFINED],
)
def test_edge_cases_that_are_defined_score_as_worked_out(
    annotations: list[dict[str, Any]],
    detections: list[dict[str, Any]],
    expected: tuple[float, float, float],
) -> None:
    metrics = coco_metrics(coco(*annotations), detections)
    assert tuple(metrics[m] for m in ("map", "map50", "recall")) == pytest.approx(expected)


def test_pycocotools_minus_one_fails_instead_of_becoming_zero() -> None:
    """Validation rules the -1 out; were one to come through, it is an error, not 0.0 (what
    the old clamp recorded as a succeeded run's mAP)."""
    crowd = coco({"iscrowd": 1, "area": 100})
    with pytest.raises(UndefinedMetric, match="metric map is undefined: pycocotools counts no"):
        _evaluate(crowd, [det([10, 10, 10, 10])], "bbox", STATS)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "instances.json"
    path.write_text(text, encoding="utf-8")
    return path


# (why, the JSON text, the reason's words): read as publish and the run both read it
UNREADABLE = [
    ("nested 100,000 deep", '{"images": ' + "[" * 100_000 + "]" * 100_000 + "}", "64 deep"),
    ("nested 200 deep", '{"x": ' + "[" * 200 + "]" * 200 + "}", "nested more than 64 deep"),
    (
        "a key twice",
        json.dumps(coco({}))[:-1] + ', "images": []}',  # Python keeps the last, others the first
        "key 'images' appears twice",
    ),
    (
        "NaN",
        json.dumps(coco({"area": 7})).replace('"area": 7', '"area": NaN'),
        "NaN is not a JSON number",
    ),
    ("not JSON", "{", "Expecting property name"),
    ("area as text", json.dumps(coco({"area": "big"})), "area must be a number"),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE]
)
def test_unreadable_coco_json_is_a_label_problem_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(LabelProblem) as caught:
        read_ground_truth(
            _write(tmp_path, text),
            where="instances.json",
            samples=["images/a.png"],
            folder="images",
        )
    assert caught.value.path == "instances.json"
    assert message in str(caught.value)


def test_readable_coco_json_is_validated_and_matched() -> None:
    gt = validate_ground_truth(coco({"area": 40}))
    assert [(a["area"], a["iscrowd"]) for a in gt["annotations"]] == [(40, 0)]


# --- segmentation ----------------------------------------------------------------------------


def _reference_miou(
    truth: np.ndarray[Any, Any], predicted: np.ndarray[Any, Any], classes: int
) -> tuple[float, float]:
    """mmsegmentation's IoUMetric, written out: per class, intersection over union over
    every pixel, NaN where the union is empty, then the mean of the others (nanmean)."""
    ious = []
    for c in range(classes):
        inter = np.sum((truth == c) & (predicted == c))
        union = np.sum((truth == c) | (predicted == c))
        ious.append(inter / union if union else math.nan)
    return float(np.nanmean(ious)), float(np.mean(truth == predicted))


@pytest.mark.parametrize("seed", range(5))
def test_miou_leaves_out_classes_absent_from_truth_and_prediction(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.choice([0, 2, 5], size=(2, 9, 7))  # classes 1, 3, 4 in no truth...
    predicted = rng.choice([0, 2, 3, 5], size=(2, 9, 7))  # ...and 1, 4 never predicted
    confusion = Confusion(classes=6)
    for t, p in zip(truth, predicted, strict=True):
        confusion.add(t, p)
    miou, accuracy = _reference_miou(truth, predicted, 6)
    assert confusion.ious()[1] is None and confusion.ious()[4] is None
    assert confusion.metrics() == pytest.approx({"miou": miou, "pixel_accuracy": accuracy})


def test_nothing_counted_is_undefined_not_a_number() -> None:
    confusion = Confusion(classes=2, ignore_index=255)
    confusion.add(np.full((3, 3), 255), np.zeros((3, 3), dtype=np.int64))
    assert confusion.counted == 0
    assert all(math.isnan(v) for v in confusion.metrics().values())  # the run refuses this


# --- sentence similarity ---------------------------------------------------------------------

PAIRS = Pairs(np.array([0, 2, 4]), np.array([1, 3, 5]), np.array([1.0, 3.0, 2.0]))


def test_spearman_equals_a_reference_of_the_cosines() -> None:
    rng = np.random.default_rng(3)
    embeddings = rng.normal(size=(6, 4))
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    cosine = np.array([unit[i] @ unit[j] for i, j in zip(PAIRS.first, PAIRS.second, strict=True)])
    # three pairs, no ties: rho = 1 - 6 * sum(d^2) / (n (n^2 - 1))
    rank = np.argsort(np.argsort(cosine)) + 1
    gold = np.argsort(np.argsort(PAIRS.gold)) + 1
    expected = 1 - 6 * float(np.sum((rank - gold) ** 2)) / (3 * 8)
    assert similarity_metrics(embeddings, PAIRS)["spearman"] == pytest.approx(expected)
    assert spearman(cosine, PAIRS.gold) == pytest.approx(expected)


def test_a_zero_embedding_has_no_cosine_similarity() -> None:
    embeddings = np.random.default_rng(4).normal(size=(6, 4))
    embeddings[3] = 0.0  # scikit-learn's normalize would score its pair's cosine as 0
    with pytest.raises(SimilarityError, match="sample 3's embedding is all zeros"):
        similarity_metrics(embeddings, PAIRS)
    unpaired = np.vstack([np.random.default_rng(5).normal(size=(6, 4)), np.zeros((1, 4))])
    assert math.isfinite(similarity_metrics(unpaired, PAIRS)["spearman"])  # sample 6 unpaired
