"""Thresholds at equality (issue 64, item 3; decision 276): every task that compares a model's
scores with a threshold its manifest declares compares them in the precision of the output
they are read from (``pinbench.tasks.threshold``), as NumPy's ``v >= 0.7`` on the output array
does. Each case drives one thresholded place through the task's own entry point with float32
scores exactly at the threshold and checks what the task reports (its metric, or the
detections it keeps) against the same figure computed directly on the output in NumPy.

Two thresholds, one each side of a float64 cast: ``np.float32(0.7)`` is just below 0.7 (so a
float32 0.7 met threshold 0.7 in no ``>=`` comparison made after the cast), ``np.float32(0.3)``
just above 0.3 (so a float32 0.3 was above threshold 0.3 in DBNet's ``>``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from pinbench.registry.detection_heads import Ssd
from pinbench.registry.lockfile import LockedDataset, LockedModel
from pinbench.registry.ports import Detection, Segmentation
from pinbench.tasks.base import Context
from pinbench.tasks.classification.binary import predicted_classes
from pinbench.tasks.detection.boxes import Transform
from pinbench.tasks.detection.heads import decode_ssd
from pinbench.tasks.detection.layouts import Detections, decode, decode_separate
from pinbench.tasks.detection.masks import image_mask
from pinbench.tasks.detection.regions import Settings, regions
from pinbench.tasks.detection.score import kept
from pinbench.tasks.parity import Recorded
from pinbench.tasks.registry import task
from pinbench.tasks.segmentation.classes import class_maps
from pinbench.tasks.segmentation.metrics import Confusion
from pinbench.tasks.threshold import above, at_least, precision
from pinbench.worker.datasets import Samples

Floats32 = npt.NDArray[np.float32]
Flags = npt.NDArray[np.bool_]
Case = Callable[[float], tuple[Any, Any]]
"""A threshold -> (what the task reports, the same computed directly in NumPy)."""

THRESHOLDS = (0.7, 0.3)
LABELS = np.array([1, 1, 0, 1])
RATE, CHUNK = 16_000, 160  # a frame is 0.01 s
SPEECH = [[0.0, 0.02], [0.03, 0.04]]  # frames 0, 1 and 3 of 4: LABELS


def scores(threshold: float) -> Floats32:
    """Two scores exactly at the threshold (its float32), one below, one above."""
    return np.array([threshold, threshold, 0.2, 0.9], dtype=np.float32)


def logits(threshold: float) -> Floats32:
    """The float32 logits of ``scores``: their float32 sigmoid is ``scores`` exactly."""
    p = scores(threshold).astype(np.float64)
    found = np.log(p / (1 - p)).astype(np.float32)
    assert (sigmoid32(found) == scores(threshold)).all()  # NumPy's own sigmoid in float32
    return found


def sigmoid32(x: Floats32) -> Floats32:
    one = np.float32(1)
    return one / (one + np.exp(-x))


def meets(v: npt.NDArray[Any], threshold: float) -> Flags:
    """NumPy's ``v >= threshold`` on the output array: the threshold in ``v``'s precision."""
    return v >= np.asarray(threshold, dtype=v.dtype)


def counts(predicted: Flags, truth: Flags) -> dict[str, float]:
    tp = int(np.count_nonzero(predicted & truth))
    fp = int(np.count_nonzero(predicted & ~truth))
    fn = int(np.count_nonzero(~predicted & truth))
    return {"tp": tp, "fp": fp, "fn": fn}


# ---------------------------------------------------------------- the tasks, as they are run


def locked_model(outputs: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> LockedModel:
    model = {"name": "m", "version": "1.0.0", "format": "onnx", "architecture": None}
    doc = model | {"trusted": False, "inputs": inputs, "outputs": outputs}
    return msgspec.convert(doc, LockedModel)


def locked_dataset(task_name: str, labels: dict[str, Any], **data: str) -> LockedDataset:
    doc: dict[str, Any] = {"name": "d", "version": "1.0.0", "manifest_digest": "0" * 64}
    doc |= {"samples": None} | ({"data": data} if data else {})
    return msgspec.convert(doc | {"task": task_name, "labels": labels}, LockedDataset)


def binary_output(threshold: float, form: str) -> dict[str, Any]:
    return {"name": "p", "type": "binary", "binary": {"threshold": threshold, "form": form}}


def classify(values: Floats32, threshold: float, form: str) -> dict[str, Any]:
    """The classification task's scorer of a binary output: its metrics and shown classes."""
    model = locked_model([binary_output(threshold, form)], [])
    labels = {"format": "class-index-npy", "path": "labels.npy", "classes": 2}
    dataset = locked_dataset("classification", labels)
    samples = Samples(np.zeros((4, 1)), None, "npy", labels=LABELS, classes=2)
    scorer = task("classification").prepare(
        Context(model, "m@1.0.0", {}, dataset, samples, True, None)
    )
    assert scorer is not None
    scored = scorer.score({i: {"p": values[i : i + 1, None]} for i in range(4)}, {})
    shown = [row["top1"] == 1 for row in scored.details["samples"]]
    return {k: scored.metrics[k] for k in ("binary_accuracy", "binary_f1")} | {"shown": shown}


def binary_reference(predicted: Flags) -> dict[str, Any]:
    c = counts(predicted, LABELS == 1)
    return {
        "binary_accuracy": float(np.mean(predicted == (LABELS == 1))),
        "binary_f1": 2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"]),
        "shown": predicted.tolist(),
    }


def binary_probability(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold)
    return classify(v, threshold, "probability"), binary_reference(meets(v, threshold))


def binary_logit(threshold: float) -> tuple[Any, Any]:
    v = logits(threshold)
    return classify(v, threshold, "logit"), binary_reference(meets(sigmoid32(v), threshold))


def binary_parity(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold)
    model = locked_model([binary_output(threshold, "probability")], [])
    labels = {"format": "class-index-npy", "path": "labels.npy", "classes": 2}
    dataset = locked_dataset("classification", labels)
    recorded = Recorded("r" * 32, v[:, None], "p", {}, {}, model, dataset)
    return predicted_classes(recorded).tolist(), meets(v, threshold).tolist()


def voice_activity(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold)
    streamed = {
        "name": "audio",
        "shape": [CHUNK],
        "steps": [{"decode_audio": {"channel": "mix", "rate": RATE}}],
        "stream": {"chunk": CHUNK},
    }
    output = binary_output(threshold, "probability") | {"name": "speech"}
    model = locked_model([output], [streamed])
    labels = {"format": "speech-segments", "path": "s.jsonl"}
    dataset = locked_dataset("voice-activity", labels, format="audio", path="wavs")
    samples = Samples(None, None, "audio", truth=[SPEECH])
    scorer = task("voice-activity").prepare(
        Context(model, "m@1.0.0", {}, dataset, samples, True, None)
    )
    assert scorer is not None
    scored = scorer.score({0: {"speech": v[None, :, None]}}, {"audio": np.array([[0, 4]])})
    got = {k: scored.metrics[k] for k in ("frame_precision", "frame_recall", "frame_f1")}
    c = counts(meets(v, threshold), LABELS == 1)
    expected = {
        "frame_precision": c["tp"] / (c["tp"] + c["fp"]),
        "frame_recall": c["tp"] / (c["tp"] + c["fn"]),
        "frame_f1": 2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"]),
    }
    return got, expected


def segmentation(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold).reshape(1, 1, 2, 2)
    section = Segmentation(form="probability", threshold=threshold)
    predicted = class_maps(v, section, "p", classes=2)
    confusion = Confusion(2)
    confusion.add(LABELS.reshape(1, 2, 2), predicted)
    expected = float(np.mean(meets(v, threshold).reshape(-1) == (LABELS == 1)))
    return confusion.metrics()["pixel_accuracy"], expected


# Detections: box i is at x = 10 i, so the boxes kept name the scores kept.
BOXES = np.array([[10.0 * i, 0.0, 10.0 * i + 5, 5.0] for i in range(4)])
IDENTITY = Transform.identity(40, 5)


def which(found: Detections) -> list[int]:
    return sorted(int(x) // 10 for x in found.boxes[:, 0])


def detection(threshold: float, **section: Any) -> Detection:
    return msgspec.convert({"score_threshold": threshold} | section, Detection)


def separate(threshold: float, with_nms: bool) -> tuple[Any, Any]:
    v = scores(threshold)
    found = decode_separate(BOXES[None], v[None], None, None, None, box_format="xyxy")[0]
    nms = {"nms": {"iou": 0.5}} if with_nms else {}
    section = detection(threshold, layout="separate", box_format="xyxy", scores="s", **nms)
    return which(kept(found, section, IDENTITY)), np.flatnonzero(meets(v, threshold)).tolist()


def separate_alone(threshold: float) -> tuple[Any, Any]:
    return separate(threshold, with_nms=False)


def separate_nms(threshold: float) -> tuple[Any, Any]:
    return separate(threshold, with_nms=True)


def yolov8(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold)
    centres = np.stack([BOXES[:, 0] + 2.5, BOXES[:, 1] + 2.5, BOXES[:, 2] - BOXES[:, 0]])
    packed = np.concatenate([centres, centres[2:], v[None]]).astype(np.float32)  # (4 + 1, A)
    found = decode(packed[None], "yolov8")[0]
    section = detection(threshold, layout="yolov8", nms={"iou": 0.5})
    return which(kept(found, section, IDENTITY)), np.flatnonzero(meets(v, threshold)).tolist()


def ssd(threshold: float) -> tuple[Any, Any]:
    v = logits(threshold)
    anchors = np.concatenate([BOXES[:, :2] + 2.5, BOXES[:, 2:] - BOXES[:, :2]], axis=1)
    section = msgspec.convert({"anchors": "a.npy", "activation": "sigmoid"}, Ssd)
    deltas = np.zeros((1, 4, 4), dtype=np.float32)
    found = decode_ssd(deltas, v[None, :, None], anchors, section, ("d", "s"), threshold)[0]
    return which(found), np.flatnonzero(meets(sigmoid32(v), threshold)).tolist()


def regions_of(v: Floats32, settings: Settings) -> list[int]:
    """The scores whose pixel became a box: each an isolated pixel of a one-row map."""
    row = np.zeros(2 * len(v) - 1, dtype=np.float32)
    row[::2] = v
    found = regions(row[None, None, None], settings)[0]
    return sorted(int(np.floor(c)) // 2 for c in (found.boxes[:, 0] + found.boxes[:, 2]) / 2)


def probability_map(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold)
    got = regions_of(v, Settings(threshold=threshold, box_threshold=0.0, min_size=1))
    return got, np.flatnonzero(v > np.asarray(threshold, dtype=v.dtype)).tolist()  # DBNet's >


def box_threshold(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold)
    got = regions_of(v, Settings(threshold=0.1, box_threshold=threshold, min_size=1))
    mean = v.astype(np.float64)  # a one-pixel region's mean: cv2.mean's float64
    return got, np.flatnonzero(mean >= threshold).tolist()


def mask(threshold: float) -> tuple[Any, Any]:
    v = scores(threshold).reshape(1, 4)
    on = image_mask(v, Transform.identity(4, 1), threshold)
    return on.astype(bool).tolist(), meets(v, threshold).tolist()


CASES: list[tuple[str, Case, str]] = [
    (
        "binary-probability",
        binary_probability,
        "binary_accuracy and F1 of a sigmoid's probabilities, and the classes the details "
        "show: compared after a float64 cast before, so a float32 0.7 was class 0",
    ),
    (
        "binary-logit",
        binary_logit,
        "a logit's sigmoid is computed in float64 and rounded to the output's float32, as "
        "NumPy's float32 sigmoid gives it, before the threshold",
    ),
    (
        "binary-parity",
        binary_parity,
        "a rerun's comparison reads each run's predicted classes by the same rule",
    ),
    (
        "voice-activity",
        voice_activity,
        "frame precision, recall and F1 of a float32 speech probability: compared after the "
        "float64 probabilities were concatenated before",
    ),
    (
        "segmentation",
        segmentation,
        "a probability map's class 1 where the score is at least the threshold: compared in "
        "the output's precision already; now through the shared rule",
    ),
    (
        "detection-threshold",
        separate_alone,
        "score_threshold without NMS: boxes were held in float64 and compared there",
    ),
    (
        "detection-nms",
        separate_nms,
        "score_threshold inside NMS, on the separate layout's float32 scores",
    ),
    (
        "detection-yolov8",
        yolov8,
        "a packed output's best class score, the output's precision carried by the boxes",
    ),
    (
        "detection-ssd",
        ssd,
        "an SSD head's (anchor, class) candidates at the floor, after its sigmoid: rounded to "
        "the scores output's float32 first",
    ),
    (
        "probability-map",
        probability_map,
        "DBNet's pred > thresh: a pixel of float32 0.3 is not above threshold 0.3 in the "
        "map's precision (it was, after the float64 cast)",
    ),
    (
        "probability-map-box",
        box_threshold,
        "the exception the reference defines: a region's mean is PaddleOCR's float64 "
        "statistic (cv2.mean), compared with box_threshold in float64",
    ),
    (
        "mask",
        mask,
        "an instance mask pixel at or above mask_threshold: mask scores are float32 (PIL's "
        "resize) and were already compared in it",
    ),
]


@pytest.mark.parametrize("threshold", THRESHOLDS)
@pytest.mark.parametrize(("name", "case", "why"), CASES, ids=[c[0] for c in CASES])
def test_a_score_at_its_threshold_is_read_as_numpy_reads_the_output(
    name: str, case: Case, why: str, threshold: float
) -> None:
    got, expected = case(threshold)
    assert got == expected, f"{name}: {why}"


def test_the_rule_for_integer_and_half_precision_outputs() -> None:
    """An integer output is compared in float64 (exact); a float16 one in float16."""
    assert precision(np.int64) == np.float64 and precision(np.bool_) == np.float64
    assert at_least(np.array([0, 1, 2]), 1.0).tolist() == [False, True, True]
    half = np.array([0.7, 0.3], dtype=np.float16)
    assert at_least(half, 0.7).tolist() == (half >= np.float16(0.7)).tolist() == [True, False]
    assert above(np.array([0.3], dtype=np.float16), 0.3).tolist() == [False]
    assert at_least(np.array([np.nan]), 0.0).tolist() == [False]
    # a float64 score derived from a float32 output is rounded to float32 first
    derived = np.float64(np.float32(0.7)) - 1e-12
    assert at_least([derived], 0.7, dtype=np.float32).tolist() == [True]
    assert at_least([derived], 0.7).tolist() == [False]
