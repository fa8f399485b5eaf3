"""Detection parity: each image's boxes in one run matched to the other's (the same class at
IoU >= ``MATCH_IOU``), the boxes left unmatched on either side, and the largest score
difference of a matched pair (``runs parity``).

What is compared is what the runs recorded: ``details.detections``, per image its first
``score.DETAIL_LIMIT`` detections, best first, as ``[category_id, score, x, y, w, h]`` on the
original image (score to 4 decimals, the box to 2). An image with that many recorded may
have had more: there a box of one run scored no higher than the other's last recorded box
may lie in the other's unrecorded rest, so it counts as ``unchecked``, not unmatched.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.tasks.detection.nms import iou
from pinbench.tasks.parity import Agreement, Figure, Incomparable, Recorded, same_samples

MATCH_IOU = 0.99
"""Two boxes are the same detection when their classes are the same and their IoU is at least
this (floating-point reordering moves a box by far less; a changed model by far more)."""
SCORE_TOLERANCE = 1e-3
"""The most a matched box's score may differ for the runs to agree (scores are recorded to 4
decimals)."""


def detections_of(recorded: Recorded) -> list[npt.NDArray[np.float64]]:
    """Per image its recorded detections as rows ``[category, score, x1, y1, x2, y2]``."""
    found = recorded.details.get("detections")
    if not isinstance(found, list):
        raise Incomparable(run=recorded.run, reason="it recorded no detections per image")
    out = []
    for image in found:
        rows = np.asarray(image, dtype=np.float64).reshape(-1, 6)
        rows[:, 4:6] += rows[:, 2:4]  # xywh -> xyxy
        out.append(rows)
    return out


def match(ref: npt.NDArray[np.float64], other: npt.NDArray[np.float64]) -> list[tuple[int, int]]:
    """Greedy one-to-one matching of one image's detections: each reference box, best score
    first, takes the unmatched other box of its class with the highest IoU, if at least
    ``MATCH_IOU`` (the first such on a tie)."""
    pairs: list[tuple[int, int]] = []
    free = np.ones(len(other), dtype=bool)
    for i in np.argsort(-ref[:, 1], kind="stable"):
        candidates = np.flatnonzero(free & (other[:, 0] == ref[i, 0]))
        if not candidates.size:
            continue
        boxes = other[candidates, 2:6]
        same = np.all(boxes == ref[i, 2:6], axis=1)  # an empty box is its own match too
        overlap = np.where(same, 1.0, iou(ref[i, 2:6], boxes))
        best = int(np.argmax(overlap))
        if overlap[best] >= MATCH_IOU:
            pairs.append((int(i), int(candidates[best])))
            free[candidates[best]] = False
    return pairs


def _unmatched(
    rows: npt.NDArray[np.float64], taken: set[int], against: npt.NDArray[np.float64], limit: int
) -> tuple[int, int]:
    """(unmatched, unchecked) of one side's boxes: a box is unchecked when the other side
    recorded ``limit`` boxes and its score is no higher than the other's last recorded one."""
    left = [i for i in range(len(rows)) if i not in taken]
    if len(against) < limit or not left:
        return len(left), 0
    cut = float(against[:, 1].min())
    unchecked = sum(1 for i in left if rows[i, 1] <= cut)
    return len(left) - unchecked, unchecked


def box_parity(reference: Recorded, other: Recorded) -> Agreement:
    """Boxes matched per image; the runs agree when no box is left unmatched on either side
    and no matched pair's scores differ by more than ``SCORE_TOLERANCE``."""
    from pinbench.tasks.detection.score import DETAIL_LIMIT

    ref, out = detections_of(reference), detections_of(other)
    same_samples(ref, out, run=other.run)
    matched = only_ref = only_other = unchecked = 0
    score_diff = 0.0
    for a, b in zip(ref, out, strict=True):
        pairs = match(a, b)
        matched += len(pairs)
        if pairs:
            i, j = np.array(pairs).T
            score_diff = max(score_diff, float(np.abs(a[i, 1] - b[j, 1]).max()))
        lost, unseen = _unmatched(a, {p[0] for p in pairs}, b, DETAIL_LIMIT)
        only_ref, unchecked = only_ref + lost, unchecked + unseen
        lost, unseen = _unmatched(b, {p[1] for p in pairs}, a, DETAIL_LIMIT)
        only_other, unchecked = only_other + lost, unchecked + unseen
    figures = [
        Figure("matched", "boxes matched", float(matched), "count"),
        Figure("only_reference", "only in reference", float(only_ref), "count"),
        Figure("only_this", "only in this run", float(only_other), "count"),
        Figure("max_score_diff", "max score diff", score_diff),
        Figure("unchecked", "beyond the record", float(unchecked), "count"),
        Figure("images", "images", float(len(ref)), "count"),
    ]
    return Agreement(
        tuple(figures),
        only_ref == 0 and only_other == 0 and score_diff <= SCORE_TOLERANCE,
        f"every box matched (same class, IoU >= {MATCH_IOU:g}), scores within {SCORE_TOLERANCE:g}",
    )
