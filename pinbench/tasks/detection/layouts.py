"""Detector outputs as per-sample boxes, scores and classes in model-input pixels (``xyxy``).

Either one packed tensor with a declared layout (``decode``, layout names in ``LAYOUTS``):

- ``yolov8``: ``(N, 4 + C, A)``, per anchor ``cx, cy, w, h`` in input pixels then ``C`` class
  scores, no objectness (ultralytics YOLOv8/v11 ONNX exports, NudeNet);
- ``yolov5``: ``(N, A, 5 + C)``, per anchor ``cx, cy, w, h``, objectness, ``C`` class
  probabilities; a box's score is objectness times its best class's probability;

or separate outputs (``decode_separate``, layout ``separate``): boxes ``(N, K, 4)`` in any
``boxes.FORMATS``, scores ``(N, K)``, classes ``(N, K)`` (else all 0), a valid count ``(N,)``
and masks ``(N, K, h, w)`` (instance segmentation), as TensorFlow's Object Detection API and
MLModelScope's ``boundingbox``/``instancesegment`` outputs give them. A packed box's class is its
best-scoring column; NMS and thresholds come after (``nms``), compared in the precision of the
output the scores are read from (``Detections.precision``, ``tasks.threshold``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.tasks.detection.boxes import BoxArray, to_xyxy
from pinbench.tasks.detection.errors import BadDetectorOutput, UnknownLayout
from pinbench.tasks.detection.nms import nms
from pinbench.tasks.threshold import precision

FLOAT64 = np.dtype(np.float64)


@dataclass(frozen=True, slots=True)
class Detections:
    """One sample's detections: ``boxes`` ``(n, 4)`` pixel ``xyxy``, ``scores`` ``(n,)``,
    ``classes`` ``(n,)`` integer class indices (columns of the model's output)."""

    boxes: BoxArray
    scores: npt.NDArray[np.float64]
    classes: npt.NDArray[np.int64]
    masks: npt.NDArray[np.float32] | None = None
    """``(n, h, w)`` mask scores, one per box (instance segmentation), or none."""
    precision: np.dtype[Any] = FLOAT64
    """The dtype of the output the scores are read from, which a score threshold is compared
    in (``tasks.threshold``); the scores themselves are held in float64."""

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def take(self, indices: npt.NDArray[np.intp]) -> Detections:
        masks = None if self.masks is None else self.masks[indices]
        return Detections(
            self.boxes[indices],
            self.scores[indices],
            self.classes[indices],
            masks,
            self.precision,
        )

    def scaled(self, factors: BoxArray) -> Detections:
        """The boxes multiplied by ``factors`` (x, y, x, y): normalized boxes to pixels."""
        return Detections(
            self.boxes * factors, self.scores, self.classes, self.masks, self.precision
        )

    def suppressed(
        self,
        *,
        iou_threshold: float,
        score_threshold: float = 0.0,
        max_detections: int | None = None,
        class_agnostic: bool = False,
    ) -> Detections:
        """Per-class (or class-agnostic) NMS (see ``nms.nms``), best first."""
        keep = nms(
            self.boxes,
            self.scores,
            self.classes,
            iou_threshold=iou_threshold,
            score_threshold=score_threshold,
            max_detections=max_detections,
            class_agnostic=class_agnostic,
            dtype=self.precision,
        )
        return self.take(keep)


def _best_class(
    scores: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    classes = np.argmax(scores, axis=1).astype(np.int64)
    return np.take_along_axis(scores, classes[:, None], axis=1)[:, 0], classes


def _packed(output: npt.ArrayLike, layout: str, minimum: int) -> npt.NDArray[np.float64]:
    x = np.asarray(output, dtype=np.float64)
    if x.ndim != 3:
        raise BadDetectorOutput(layout=layout, shape=x.shape, reason="expected 3 dimensions")
    columns = x.shape[1] if layout == "yolov8" else x.shape[2]
    if columns <= minimum:
        raise BadDetectorOutput(
            layout=layout,
            shape=x.shape,
            reason=f"expected more than {minimum} values per anchor, got {columns}",
        )
    _finite(x, layout)
    return x


def _finite(x: npt.NDArray[np.floating[Any]], layout: str) -> None:
    """Refuse a NaN or infinite value: a NaN score fails every threshold and sorts nowhere,
    so its box would silently vanish (or, as a box, suppress others in NMS) and the COCO
    metrics of the rest be recorded as the model's."""
    bad = ~np.isfinite(x)
    if bad.any():
        where = tuple(int(v[0]) for v in np.nonzero(bad))
        raise BadDetectorOutput(
            layout=layout,
            shape=x.shape,
            reason=f"value {float(x[where])!r} at {list(where)} (sample {where[0]}) is not a "
            "finite number: which boxes are kept, so every COCO metric, is undefined",
        )


def decode_yolov8(output: npt.ArrayLike) -> list[Detections]:
    x = _packed(output, "yolov8", 4)
    kind = precision(np.asarray(output).dtype)
    out = []
    for sample in x:
        rows = sample.T  # (A, 4 + C)
        scores, classes = _best_class(rows[:, 4:])
        out.append(Detections(to_xyxy(rows[:, :4], "cxcywh"), scores, classes, None, kind))
    return out


def decode_yolov5(output: npt.ArrayLike) -> list[Detections]:
    x = _packed(output, "yolov5", 5)
    kind = precision(np.asarray(output).dtype)
    out = []
    for rows in x:  # (A, 5 + C)
        scores, classes = _best_class(rows[:, 5:] * rows[:, 4:5])
        out.append(Detections(to_xyxy(rows[:, :4], "cxcywh"), scores, classes, None, kind))
    return out


LAYOUTS: dict[str, Callable[[npt.ArrayLike], list[Detections]]] = {
    "yolov8": decode_yolov8,
    "yolov5": decode_yolov5,
}


def decode(output: npt.ArrayLike, layout: str) -> list[Detections]:
    """A packed output as one ``Detections`` per sample, before any threshold or NMS."""
    if layout not in LAYOUTS:
        raise UnknownLayout(name=layout, known=tuple(LAYOUTS))
    return LAYOUTS[layout](output)


def decode_separate(
    boxes: npt.ArrayLike,
    scores: npt.ArrayLike,
    classes: npt.ArrayLike | None,
    count: npt.ArrayLike | None,
    masks: npt.ArrayLike | None,
    *,
    box_format: str,
) -> list[Detections]:
    """Separate outputs of N samples as one ``Detections`` per sample (``xyxy`` in the boxes'
    own units: pixels, or fractions when normalized), the first ``count`` of each sample's K
    boxes when a count is given."""
    b = np.asarray(boxes, dtype=np.float64)
    if b.ndim != 3 or b.shape[2] != 4:
        raise BadDetectorOutput(layout="separate", shape=b.shape, reason="boxes must be (N, K, 4)")
    n, k = b.shape[:2]
    s = _per_box(scores, (n, k), "scores")
    c = (
        np.zeros((n, k), dtype=np.float64)
        if classes is None
        else _per_box(classes, (n, k), "classes")
    )
    if c.size and not np.all(np.equal(np.mod(c, 1), 0)):
        raise BadDetectorOutput(
            layout="separate", shape=c.shape, reason="classes are not whole numbers"
        )
    kind = precision(np.asarray(scores).dtype)  # a score threshold is compared in it
    valid = np.full(n, k, dtype=np.int64) if count is None else _counts(count, n, k)
    m = None if masks is None else np.asarray(masks, dtype=np.float32)
    if m is not None and (m.ndim != 4 or m.shape[:2] != (n, k)):
        raise BadDetectorOutput(
            layout="separate", shape=m.shape, reason=f"masks must be ({n}, {k}, h, w)"
        )
    out = []
    for i in range(n):
        keep = slice(0, int(valid[i]))
        _finite(b[i, keep], "separate")  # padding past the count may hold anything
        if m is not None:
            _finite(m[i, keep], "separate")
        out.append(
            Detections(
                to_xyxy(b[i, keep], box_format),
                s[i, keep],
                c[i, keep].astype(np.int64),
                None if m is None else m[i, keep],
                kind,
            )
        )
    return out


def _per_box(values: npt.ArrayLike, shape: tuple[int, int], what: str) -> npt.NDArray[np.float64]:
    x = np.asarray(values, dtype=np.float64)
    if x.shape != shape:
        raise BadDetectorOutput(
            layout="separate", shape=x.shape, reason=f"{what} must be {list(shape)} like the boxes"
        )
    if not np.all(np.isfinite(x)):
        raise BadDetectorOutput(
            layout="separate", shape=x.shape, reason=f"{what} are not all finite"
        )
    return x


def _counts(count: npt.ArrayLike, n: int, k: int) -> npt.NDArray[np.int64]:
    x = np.asarray(count, dtype=np.float64).reshape(-1)
    if x.shape != (n,) or not np.all(np.equal(np.mod(x, 1), 0)) or np.any((x < 0) | (x > k)):
        raise BadDetectorOutput(
            layout="separate",
            shape=np.asarray(count).shape,
            reason=f"count must be one whole number 0..{k} per sample ({n} samples)",
        )
    return x.astype(np.int64)
