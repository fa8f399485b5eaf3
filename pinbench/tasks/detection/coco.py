"""COCO box metrics with pycocotools (the reference MLPerf's object-detection benchmarks use),
run in memory: the ground truth is handed to ``COCO()`` as its ``dataset`` and indexed, the
detections to ``loadRes`` as a list; nothing is written to disk and pycocotools' prints are
swallowed.

The ground truth is validated first (``validate_ground_truth``), because pycocotools accepts
inputs it then misreads: an annotation id 0 is never counted as matched (``COCOeval`` marks
matches by the matched id, and 0 means none), a missing ``iscrowd`` or ``area`` is a
``KeyError`` mid-evaluation, and duplicate ids silently overwrite each other in its index.

Metrics: all twelve of ``COCOeval.stats`` (``stats.STATS``: ``map`` = AP@[.50:.05:.95],
``map50``, ``map75``, ``map_small``/``_medium``/``_large``, ``ar1``, ``ar10``, ``recall`` =
AR@100, ``ar_small``/``_medium``/``_large``), each exactly as pycocotools computes it; with
instance masks the same twelve from ``iouType="segm"`` with a ``mask_`` prefix
(``coco_mask_metrics``), every annotation then needing a ``segmentation`` (polygons, or an
RLE of its image's size: ``validate_segmentations``). The boxes are scored as they are given:
``to_coco`` has already clipped them to the image (``Transform.to_original``).

When a metric is undefined: pycocotools averages AP and AR over the categories that have
ground truth that counts (an annotation that is not ``iscrowd`` and whose ``area`` lies in
the statistic's area range), and gives -1 when no category has any. For the "all" range
(0 to 1e10) validation makes that impossible (``area`` a finite number from 0 to its image's
pixel count, at least one annotation not ``iscrowd``), and a -1 that still comes out fails
the run (``UndefinedMetric``). A small, medium or large statistic is undefined whenever the
dataset has no such object (no small faces among large ones): it is left out of the metrics,
never recorded as a number, and ``undefined_stats`` gives the reason the run records in its
details (decision 165). A category without ground truth that counts is left out of the mean,
as COCO defines it (its detections change nothing). No detections at all is defined: every
defined metric is 0.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pinbench.tasks.detection.boxes import Transform, from_xyxy
from pinbench.tasks.detection.errors import BadDetections, BadGroundTruth
from pinbench.tasks.detection.layouts import Detections
from pinbench.tasks.detection.rle import rle_problem
from pinbench.tasks.detection.stats import MASK_STATS, STATS, Stat
from pinbench.worker.undefined import UndefinedMetric

METRICS = tuple(s.name for s in STATS)
MASK_METRICS = tuple(s.name for s in MASK_STATS)
AREA_LIMIT = 1e5**2
"""The top of pycocotools' "all" area range: an annotation with a larger ``area`` is ignored."""


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list(gt: Mapping[str, Any], key: str) -> list[Any]:
    value = gt.get(key)
    if not isinstance(value, list):
        raise BadGroundTruth(where=key, reason="missing, or not a list")
    if not all(isinstance(item, dict) for item in value):
        raise BadGroundTruth(where=key, reason="every entry must be an object")
    return value


def _unique_ids(items: list[dict[str, Any]], key: str) -> set[int]:
    seen: set[int] = set()
    for item in items:
        ident = item.get("id")
        if not isinstance(ident, int) or isinstance(ident, bool):
            raise BadGroundTruth(where=key, reason=f"id {ident!r} is not an integer")
        if ident in seen:
            raise BadGroundTruth(where=key, reason=f"id {ident} appears twice")
        seen.add(ident)
    return seen


def validate_ground_truth(gt: Mapping[str, Any]) -> dict[str, Any]:
    """A checked copy of COCO ground truth, with ``iscrowd`` (0) and ``area`` (the box's)
    filled in where absent."""
    images = _list(gt, "images")
    categories = _list(gt, "categories")
    annotations = _list(gt, "annotations")
    _unique_ids(images, "images")
    known_categories = _unique_ids(categories, "categories")
    sizes = {}
    for image in images:
        w, h = image.get("width"), image.get("height")
        if not (_whole(w) and _whole(h) and w > 0 and h > 0):
            raise BadGroundTruth(
                where=f"image {image['id']}",
                reason=f"width and height must be positive integers, got {w!r} x {h!r}",
            )
        sizes[image["id"]] = (w, h)
    if not annotations:
        raise BadGroundTruth(where="annotations", reason="none: nothing to measure against")
    ids = _unique_ids(annotations, "annotations")
    if min(ids) < 1:
        raise BadGroundTruth(
            where="annotations",
            reason=f"id {min(ids)}: ids must be >= 1 (pycocotools reads id 0 as 'unmatched')",
        )
    out = []
    for ann in annotations:
        where = f"annotation {ann['id']}"
        if not _whole(ann.get("image_id")) or ann["image_id"] not in sizes:
            raise BadGroundTruth(where=where, reason=f"unknown image_id {ann.get('image_id')!r}")
        if not _whole(ann.get("category_id")) or ann["category_id"] not in known_categories:
            raise BadGroundTruth(
                where=where, reason=f"unknown category_id {ann.get('category_id')!r}"
            )
        bbox = ann.get("bbox")
        if not (isinstance(bbox, list) and len(bbox) == 4 and all(_number(v) for v in bbox)):
            raise BadGroundTruth(
                where=where, reason=f"bbox must be 4 numbers [x, y, w, h], got {bbox!r}"
            )
        x, y, w, h = bbox
        width, height = sizes[ann["image_id"]]
        if w <= 0 or h <= 0:
            raise BadGroundTruth(where=where, reason=f"bbox {bbox} has no area")
        if x < 0 or y < 0 or x + w > width or y + h > height:
            raise BadGroundTruth(
                where=where,
                reason=f"bbox {bbox} (x, y, w, h) is not inside the image ({width} x {height})",
            )
        iscrowd = ann.get("iscrowd", 0)
        if not (_whole(iscrowd) and iscrowd in (0, 1)):
            raise BadGroundTruth(where=where, reason=f"iscrowd must be 0 or 1, got {iscrowd!r}")
        area = ann.get("area", w * h)
        if not (_number(area) and 0 <= area <= min(width * height, AREA_LIMIT)):
            raise BadGroundTruth(
                where=where,
                reason=f"area must be a number from 0 to the image's {width} x {height} pixels, "
                f"got {area!r}",
            )
        out.append({**ann, "iscrowd": iscrowd, "area": area})
    if all(ann["iscrowd"] == 1 for ann in out):
        raise BadGroundTruth(
            where="annotations",
            reason="every one is iscrowd: 1, and crowd regions only excuse detections: with no "
            "object to find, every COCO metric is undefined",
        )
    return {**gt, "images": images, "categories": categories, "annotations": out}


def _checked_detections(
    gt: Mapping[str, Any], detections: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    images = {image["id"] for image in gt["images"]}
    categories = {category["id"] for category in gt["categories"]}
    out = []
    for i, det in enumerate(detections):
        if not _whole(det.get("image_id")) or det["image_id"] not in images:
            raise BadDetections(index=i, reason=f"unknown image_id {det.get('image_id')!r}")
        if not _whole(det.get("category_id")) or det["category_id"] not in categories:
            raise BadDetections(index=i, reason=f"unknown category_id {det.get('category_id')!r}")
        bbox = det.get("bbox")
        if not (
            isinstance(bbox, list | tuple) and len(bbox) == 4 and all(_number(v) for v in bbox)
        ):
            raise BadDetections(
                index=i, reason=f"bbox must be 4 numbers [x, y, w, h], got {bbox!r}"
            )
        if bbox[2] < 0 or bbox[3] < 0:
            raise BadDetections(index=i, reason=f"bbox {list(bbox)} has a negative size")
        if not _number(det.get("score")):
            raise BadDetections(index=i, reason=f"score must be a number, got {det.get('score')!r}")
        out.append(
            {
                "image_id": det["image_id"],
                "category_id": det["category_id"],
                "bbox": [float(v) for v in bbox],
                "score": float(det["score"]),
            }
        )
    return out


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def coco_metrics(
    ground_truth: Mapping[str, Any], detections: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """The twelve COCO box statistics (``stats.STATS``) of ``detections`` (COCO results:
    ``image_id``, ``category_id``, ``bbox`` pixel ``[x, y, w, h]``, ``score``) against COCO
    ground truth; an area range's statistic that is undefined is left out
    (``undefined_stats`` says why). No detections at all scores 0 on every defined one."""
    gt = validate_ground_truth(ground_truth)
    return _evaluate(gt, _checked_detections(gt, detections), "bbox", STATS)


def coco_mask_metrics(
    ground_truth: Mapping[str, Any], results: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """The twelve COCO statistics of instance masks (``stats.MASK_STATS``: ``mask_map`` ...;
    COCO results with ``image_id``, ``category_id``, ``segmentation`` as RLE, ``score``; no
    ``bbox``: pycocotools would replace the mask by its box) against ground truth with
    segmentations; undefined ones left out, as ``coco_metrics``'s."""
    gt = validate_segmentations(validate_ground_truth(ground_truth))
    images = {image["id"] for image in gt["images"]}
    for i, result in enumerate(results):
        if result.get("image_id") not in images or "bbox" in result:
            raise BadDetections(index=i, reason="a mask result of an unknown image, or with a bbox")
    return _evaluate(gt, [dict(r) for r in results], "segm", MASK_STATS)


def undefined_stats(metrics: Mapping[str, float], stats: Sequence[Stat]) -> dict[str, str]:
    """The reason for each of ``stats`` that ``metrics`` (``coco_metrics``' or
    ``coco_mask_metrics``') left out as undefined, by its name."""
    return {s.name: s.undefined_reason() for s in stats if s.name not in metrics}


def _evaluate(
    gt: dict[str, Any], dets: list[dict[str, Any]], iou_type: str, stats: Sequence[Stat]
) -> dict[str, float]:
    from pycocotools.coco import COCO  # type: ignore[import-untyped]
    from pycocotools.cocoeval import COCOeval  # type: ignore[import-untyped]

    with _quiet():
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        if dets:
            coco_dt = coco_gt.loadRes(dets)
        else:  # loadRes cannot take an empty list; COCOeval scores no detections as 0
            coco_dt = COCO()
            coco_dt.dataset = {**gt, "annotations": []}
            coco_dt.createIndex()
        evaluation = COCOeval(coco_gt, coco_dt, iouType=iou_type)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    out = {}
    for stat in stats:
        value = float(evaluation.stats[stat.index])
        if value == -1.0 and stat.area != "all":
            continue  # no object of this size: undefined, left out (``undefined_stats``)
        if not 0.0 <= value <= 1.0:  # -1 over all areas: validation rules it out
            raise UndefinedMetric(
                metric=stat.name,
                reason="pycocotools counts no ground-truth annotation (each is iscrowd, or its "
                "area is outside 0 to 1e10)",
            )
        out[stat.name] = value
    return out


def validate_segmentations(gt: dict[str, Any]) -> dict[str, Any]:
    """``gt`` (validated) if every annotation has a segmentation pycocotools can read:
    polygons (lists of at least three x, y points, inside the image) or an RLE whose size is
    its image's ``[height, width]`` and whose counts add up to it (``rle``)."""
    sizes = {image["id"]: (image["height"], image["width"]) for image in gt["images"]}
    for ann in gt["annotations"]:
        where = f"annotation {ann['id']}"
        seg = ann.get("segmentation")
        height, width = sizes[ann["image_id"]]
        if isinstance(seg, dict):
            problem = rle_problem(seg, height, width)
            if problem is not None:
                raise BadGroundTruth(where=where, reason=problem)
            continue
        polygons = seg if isinstance(seg, list) and seg else None
        if polygons is None or not all(_polygon(p, width, height) for p in polygons):
            raise BadGroundTruth(
                where=where,
                reason="instance masks need a segmentation on every annotation: polygons "
                "[[x1, y1, x2, y2, x3, y3, ...]] inside the image, or an RLE {size, counts}",
            )
    return gt


def _polygon(points: object, width: int, height: int) -> bool:
    if not (isinstance(points, list) and len(points) >= 6 and len(points) % 2 == 0):
        return False
    if not all(_number(v) for v in points):
        return False
    xs, ys = [float(v) for v in points[0::2]], [float(v) for v in points[1::2]]
    return min(xs) >= 0 and min(ys) >= 0 and max(xs) <= width and max(ys) <= height


def to_coco(
    image_id: int,
    detections: Detections,
    transform: Transform,
    category_ids: Sequence[int],
) -> list[dict[str, Any]]:
    """One sample's detections (model-input ``xyxy``) as COCO results on the original image:
    mapped back through ``transform`` and clipped to the image (a box past the border scores
    as its part on the image, as ultralytics' ``scale_boxes`` and torchvision's detection
    post-processing clip); the class index ``k`` becomes ``category_ids[k]``."""
    boxes = from_xyxy(transform.to_original(detections.boxes), "xywh")
    out: list[dict[str, Any]] = []
    for box, score, cls in zip(boxes, detections.scores, detections.classes, strict=True):
        if not 0 <= cls < len(category_ids):
            raise BadDetections(
                index=len(out),
                reason=f"class index {int(cls)} has no category ({len(category_ids)} known)",
            )
        out.append(
            {
                "image_id": image_id,
                "category_id": category_ids[int(cls)],
                "bbox": [float(v) for v in box],
                "score": float(score),
            }
        )
    return out
