"""COCO's twelve detection statistics computed directly, as the COCO detection evaluation
defines them (cocodataset.org/#detection-eval), without pycocotools: the reference the tests
hold ``pinbench.tasks.detection.coco`` to, beside pycocotools itself.

Per category, area range and detection limit: each image's detections of the category, best
score first, at most the limit; ground truth outside the area range or ``iscrowd`` is
"ignored"; at each IoU threshold a detection matches the unmatched object it overlaps most
(at least the threshold), an ignored one only when no other is left (a crowd may match any
number of detections, its IoU being the intersection over the detection's area); a detection
matched to an ignored object, or unmatched and itself outside the area range, does not count.
Over all images, detections ranked by score give precision and recall; AP is the mean of the
precision envelope at recall 0, .01, ..., 1 (0 past the highest recall), AR the highest recall;
each statistic is their mean over the IoU thresholds and the categories with ground truth that
counts (None with none: undefined).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# The thresholds as NumPy's linspace makes them, as pycocotools' Params does: its 0.35 is
# 0.35000000000000003, so a recall of exactly 7/20 does not reach it (nor 0.35 here).
THRESHOLDS = [float(t) for t in np.linspace(0.5, 0.95, 10)]
RECALLS = [float(r) for r in np.linspace(0.0, 1.0, 101)]
AREAS = {"all": (0.0, 1e10), "small": (0.0, 1024.0), "medium": (1024.0, 9216.0)}
AREAS["large"] = (9216.0, 1e10)

# name -> (area, detection limit, which thresholds: all, or one index, precision or recall)
STATS: dict[str, tuple[str, int, int | None, str]] = {
    "map": ("all", 100, None, "ap"),
    "map50": ("all", 100, 0, "ap"),
    "map75": ("all", 100, 5, "ap"),
    "map_small": ("small", 100, None, "ap"),
    "map_medium": ("medium", 100, None, "ap"),
    "map_large": ("large", 100, None, "ap"),
    "ar1": ("all", 1, None, "ar"),
    "ar10": ("all", 10, None, "ar"),
    "recall": ("all", 100, None, "ar"),
    "ar_small": ("small", 100, None, "ar"),
    "ar_medium": ("medium", 100, None, "ar"),
    "ar_large": ("large", 100, None, "ar"),
}

Overlap = Callable[[dict[str, Any], dict[str, Any], bool], float]
"""IoU of a detection and an object (crowd: intersection over the detection's area)."""


def box_overlap(det: dict[str, Any], gt: dict[str, Any], crowd: bool) -> float:
    ax, ay, aw, ah = det["bbox"]
    bx, by, bw, bh = gt["bbox"]
    w = min(ax + aw, bx + bw) - max(ax, bx)
    h = min(ay + ah, by + bh) - max(ay, by)
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = aw * ah if crowd else aw * ah + bw * bh - inter
    return float(inter / union)


def _match(
    dets: list[dict[str, Any]],
    gts: list[dict[str, Any]],
    threshold: float,
    area: tuple[float, float],
    overlap: Overlap,
) -> list[tuple[float, bool, bool]]:
    """(score, matched, does not count) per detection, best first, in one image."""
    low, high = area

    def ignored(g: dict[str, Any]) -> bool:
        return bool(g.get("iscrowd", 0)) or not low <= g["area"] <= high

    order = sorted(gts, key=ignored)  # objects that count first (a stable sort)
    taken = [False] * len(order)
    out = []
    for d in dets:
        best, found = min(threshold, 1 - 1e-10), -1
        for j, g in enumerate(order):
            if taken[j] and not g.get("iscrowd", 0):
                continue
            if found > -1 and not ignored(order[found]) and ignored(g):
                break
            iou = overlap(d, g, bool(g.get("iscrowd", 0)))
            if iou < best:
                continue
            best, found = iou, j
        if found == -1:
            out.append((d["score"], False, not low <= d["area"] <= high))
        else:
            taken[found] = True
            out.append((d["score"], True, ignored(order[found])))
    return out


def _precision_recall(ranked: list[tuple[float, bool, bool]], counted: int) -> tuple[float, float]:
    """AP (101-point interpolated) and recall of detections ranked over all images."""
    kept = [matched for _, matched, skip in ranked if not skip]
    tp = fp = 0
    precision, recall = [], []
    for matched in kept:
        tp, fp = tp + matched, fp + (not matched)
        precision.append(tp / (tp + fp))
        recall.append(tp / counted)
    for i in range(len(precision) - 2, -1, -1):  # the envelope: best at any higher recall
        precision[i] = max(precision[i], precision[i + 1])
    sampled, at = [], 0
    for r in RECALLS:  # the first rank whose recall reaches r (recall only grows)
        while at < len(recall) and recall[at] < r:
            at += 1
        sampled.append(precision[at] if at < len(recall) else 0.0)
    return sum(sampled) / len(sampled), (recall[-1] if recall else 0.0)


def coco_stats(
    gt: dict[str, Any],
    dets: Sequence[dict[str, Any]],
    overlap: Overlap = box_overlap,
) -> dict[str, float | None]:
    """The twelve statistics of ``dets`` (each with ``image_id``, ``category_id``, ``score``,
    ``area`` and what ``overlap`` reads) against ``gt`` (annotations with ``area``); None for
    an undefined one."""
    images = sorted(i["id"] for i in gt["images"])
    categories = sorted(c["id"] for c in gt["categories"])
    objects: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for a in gt["annotations"]:
        objects.setdefault((a["image_id"], a["category_id"]), []).append(a)
    found: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for d in sorted(dets, key=lambda d: -d["score"]):  # best first, stable
        found.setdefault((d["image_id"], d["category_id"]), []).append(d)
    out: dict[str, float | None] = {}
    for name, (area, limit, at, kind) in STATS.items():
        low, high = AREAS[area]
        per_category = []
        for c in categories:
            counted = sum(
                1
                for i in images
                for a in objects.get((i, c), [])
                if not a.get("iscrowd", 0) and low <= a["area"] <= high
            )
            if counted == 0:
                continue
            values = []
            for threshold in THRESHOLDS if at is None else [THRESHOLDS[at]]:
                ranked: list[tuple[float, bool, bool]] = []
                for i in images:
                    mine = found.get((i, c), [])[:limit]
                    ranked += _match(mine, objects.get((i, c), []), threshold, (low, high), overlap)
                ranked.sort(key=lambda r: -r[0])
                ap, ar = _precision_recall(ranked, counted)
                values.append(ap if kind == "ap" else ar)
            per_category.append(sum(values) / len(values))
        out[name] = sum(per_category) / len(per_category) if per_category else None
    return out
