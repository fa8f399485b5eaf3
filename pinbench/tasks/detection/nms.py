"""Greedy non-maximum suppression per class (or over every class at once), in NumPy,
deterministic.

Boxes below ``score_threshold`` are dropped first (compared in the precision of the output the
scores are read from, ``tasks.threshold``: a float32 0.7 meets threshold 0.7). Within each
class, boxes are visited by score, highest first, ties broken by their index (a stable sort),
and a box is suppressed when its IoU with a box already kept is greater than
``iou_threshold`` (torchvision's ``batched_nms`` rule; ``class_agnostic``: every box is of one
group, torchvision's ``nms`` rule). The kept boxes of every class are then ordered the same way
(score, then index) and the first ``max_detections`` returned.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.tasks.detection.boxes import BoxArray
from pinbench.tasks.threshold import at_least

IndexArray = npt.NDArray[np.intp]


def iou(box: npt.ArrayLike, boxes: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """IoU of one ``xyxy`` box with each of ``boxes``; 0 where the union is empty."""
    a = np.asarray(box, dtype=np.float64)
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    w = np.clip(np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0]), 0.0, None)
    h = np.clip(np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1]), 0.0, None)
    inter = w * h
    area_a = max(a[2] - a[0], 0.0) * max(a[3] - a[1], 0.0)
    area_b = np.clip(b[:, 2] - b[:, 0], 0.0, None) * np.clip(b[:, 3] - b[:, 1], 0.0, None)
    union = area_a + area_b - inter
    out: npt.NDArray[np.float64] = np.divide(
        inter, union, out=np.zeros_like(inter), where=union > 0
    )
    return out


def _by_score(scores: npt.NDArray[np.float64], indices: IndexArray) -> IndexArray:
    order = np.argsort(-scores[indices], kind="stable")
    return indices[order]


def nms(
    boxes: BoxArray,
    scores: npt.ArrayLike,
    classes: npt.ArrayLike,
    *,
    iou_threshold: float,
    score_threshold: float = 0.0,
    max_detections: int | None = None,
    class_agnostic: bool = False,
    dtype: npt.DTypeLike | None = None,
) -> IndexArray:
    """Indices of the boxes kept, best first; ``dtype``: the output's the scores are read
    from, which ``score_threshold`` is compared in (by default the scores' own)."""
    kind = np.asarray(scores).dtype if dtype is None else dtype
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    c = np.asarray(classes).reshape(-1)
    if class_agnostic:
        c = np.zeros(c.shape, dtype=np.int64)
    candidates = np.flatnonzero(at_least(s, score_threshold, dtype=kind))
    kept: list[int] = []
    for cls in np.unique(c[candidates]):
        order = _by_score(s, candidates[c[candidates] == cls])
        while order.size:
            best = int(order[0])
            kept.append(best)
            rest = order[1:]
            order = rest[iou(b[best], b[rest]) <= iou_threshold]
    result = _by_score(s, np.array(sorted(kept), dtype=np.intp))
    return result if max_detections is None else result[:max_detections]
