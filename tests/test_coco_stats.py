"""All twelve of COCOeval's statistics, box and mask, each equal to pycocotools' own
``COCOeval.stats`` and to a direct computation of COCO's definition (``tests.coco_reference``):
on randomized ground truth and detections (sizes across every area range, crowds, areas that
are not the box's, more detections than AR@1 and AR@10 read, none at all), and on cases worked
out by hand. A statistic pycocotools gives -1 (no object of its size) is left out of the
metrics, never recorded as a number, and its reason is what the run's details keep
(decision 165)."""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from pinbench.tasks.detection.boxes import Transform
from pinbench.tasks.detection.coco import (
    coco_mask_metrics,
    coco_metrics,
    to_coco,
    undefined_stats,
    validate_ground_truth,
)
from pinbench.tasks.detection.layouts import Detections
from pinbench.tasks.detection.masks import encode
from pinbench.tasks.detection.stats import MASK_STATS, STATS
from pinbench.tasks.detection.task import Detection
from tests import coco_reference

NAMES = [s.name for s in STATS]


def pycocotools_stats(
    gt: dict[str, Any], dets: list[dict[str, Any]], iou_type: str
) -> npt.NDArray[np.float64]:
    """``COCOeval.stats`` as pycocotools' README runs it (on copies: it writes into them)."""
    import copy

    from pycocotools.coco import COCO  # type: ignore[import-untyped]
    from pycocotools.cocoeval import COCOeval  # type: ignore[import-untyped]

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        if dets:
            coco_dt = coco_gt.loadRes(copy.deepcopy(dets))
        else:
            coco_dt = COCO()
            coco_dt.dataset = {**copy.deepcopy(gt), "annotations": []}
            coco_dt.createIndex()
        evaluation = COCOeval(coco_gt, coco_dt, iouType=iou_type)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return np.asarray(evaluation.stats, dtype=np.float64)


def assert_all_agree(
    ours: dict[str, float],
    library: npt.NDArray[np.float64],
    direct: dict[str, float | None],
    prefix: str = "",
) -> None:
    """Each statistic ours = pycocotools' = the direct computation; where pycocotools gives
    -1 the direct computation says undefined and ours is left out."""
    for i, name in enumerate(NAMES):
        if library[i] == -1:
            assert direct[name] is None, name
            assert prefix + name not in ours, name
            continue
        assert ours[prefix + name] == library[i], name
        assert direct[name] == pytest.approx(library[i], abs=1e-12), name
    assert set(ours) <= {prefix + n for n in NAMES}


# --- randomized boxes -----------------------------------------------------------------------


def random_boxes(rng: np.random.Generator) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """1-3 images of random sizes, 1-3 categories, objects whose sides run from 2 pixels to
    the image's (every area range), some crowds, some areas smaller than their box (as a
    segmentation's); detections near some objects, in their category or another, and stray
    ones, sometimes a dozen in one image and category (past AR@1 and AR@10), sometimes none."""
    images = [
        {"id": i + 1, "width": int(rng.integers(40, 400)), "height": int(rng.integers(40, 300))}
        for i in range(int(rng.integers(1, 4)))
    ]
    categories: list[dict[str, Any]] = [
        {"id": c + 1, "name": f"c{c}"} for c in range(int(rng.integers(1, 4)))
    ]
    annotations: list[dict[str, Any]] = []
    dets: list[dict[str, Any]] = []

    def box_in(image: dict[str, Any]) -> list[float]:
        w = float(np.exp(rng.uniform(np.log(2), np.log(image["width"]))))
        h = float(np.exp(rng.uniform(np.log(2), np.log(image["height"]))))
        x = float(rng.uniform(0, image["width"] - w))
        y = float(rng.uniform(0, image["height"] - h))
        return [x, y, w, h]

    for image in images:
        for _ in range(int(rng.integers(0, 7))):
            bbox = box_in(image)
            area = bbox[2] * bbox[3] * (float(rng.uniform(0.3, 1)) if rng.random() < 0.2 else 1)
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image["id"],
                    "category_id": int(rng.choice([c["id"] for c in categories])),
                    "bbox": bbox,
                    "area": area,
                    "iscrowd": int(rng.random() < 0.1),
                }
            )
    if not any(a["iscrowd"] == 0 for a in annotations):  # validation wants one that counts
        image = images[0]
        annotations.append(
            {"id": len(annotations) + 1, "image_id": 1, "category_id": 1, "bbox": box_in(image)}
        )
        annotations[-1].update(area=annotations[-1]["bbox"][2] * annotations[-1]["bbox"][3])
        annotations[-1]["iscrowd"] = 0
    if rng.random() < 0.08:
        return {"images": images, "categories": categories, "annotations": annotations}, []
    for a in annotations:
        if rng.random() < 0.75:
            x, y, w, h = a["bbox"]
            jitter = rng.normal(0, 0.15, 4) * [w, h, w, h]
            cat = a["category_id"] if rng.random() < 0.85 else int(rng.integers(1, 4))
            dets.append(
                {
                    "image_id": a["image_id"],
                    "category_id": min(cat, len(categories)),
                    "bbox": [x + jitter[0], y + jitter[1], abs(w + jitter[2]), abs(h + jitter[3])],
                    "score": float(rng.random()),
                }
            )
    for image in images:
        crowded = rng.random() < 0.15
        for _ in range(int(rng.integers(12, 16)) if crowded else int(rng.integers(0, 4))):
            dets.append(
                {
                    "image_id": image["id"],
                    "category_id": 1 if crowded else int(rng.integers(1, len(categories) + 1)),
                    "bbox": box_in(image),
                    "score": float(rng.random()),
                }
            )
    return {"images": images, "categories": categories, "annotations": annotations}, dets


def test_every_box_statistic_is_pycocotools_and_the_definition_on_random_cases() -> None:
    rng = np.random.default_rng(20250407)
    seen = dict.fromkeys(["undefined", "small", "medium", "large", "no detections"], 0)
    for _ in range(100):
        gt, dets = random_boxes(rng)
        ours = coco_metrics(gt, dets)
        library = pycocotools_stats(gt, dets, "bbox")
        direct_dets = [{**d, "area": d["bbox"][2] * d["bbox"][3]} for d in dets]
        assert_all_agree(ours, library, coco_reference.coco_stats(gt, direct_dets))
        seen["undefined"] += int((library == -1).any())
        seen["no detections"] += not dets
        for area, index in (("small", 3), ("medium", 4), ("large", 5)):
            seen[area] += int(0 < library[index] < 1)
    assert min(seen.values()) >= 5, seen  # every kind of case came up, several times


# --- randomized masks -----------------------------------------------------------------------


def _blob(rng: np.random.Generator, height: int, width: int) -> npt.NDArray[np.uint8]:
    """An ellipse or rectangle of random size (2 pixels to the image) at a random place."""
    mask = np.zeros((height, width), dtype=np.uint8)
    h, w = int(rng.integers(2, height + 1)), int(rng.integers(2, width + 1))
    y, x = int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1))
    if rng.random() < 0.5:
        mask[y : y + h, x : x + w] = 1
    else:
        yy, xx = np.mgrid[0:h, 0:w]
        inside = ((yy - (h - 1) / 2) / (h / 2)) ** 2 + ((xx - (w - 1) / 2) / (w / 2)) ** 2 <= 1
        mask[y : y + h, x : x + w] = inside
    if not mask.any():
        mask[y, x] = 1
    return mask


def random_masks(
    rng: np.random.Generator,
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[int, Any], list[Any]]:
    """Ground truth with RLE segmentations and mask results; the masks themselves beside
    them (by annotation id, and per result) for the direct computation."""
    width, height = int(rng.integers(30, 140)), int(rng.integers(30, 110))
    images = [{"id": i + 1, "width": width, "height": height} for i in range(2)]
    categories = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    annotations: list[dict[str, Any]] = []
    truth_masks: dict[int, Any] = {}
    for image in images:
        for _ in range(int(rng.integers(1, 5))):
            mask = _blob(rng, height, width)
            ys, xs = np.nonzero(mask)
            ident = len(annotations) + 1
            bbox = [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1)]
            bbox.append(int(ys.max() - ys.min() + 1))
            annotations.append(
                {
                    "id": ident,
                    "image_id": image["id"],
                    "category_id": int(rng.integers(1, 3)),
                    "bbox": bbox,
                    "area": int(mask.sum()),
                    "iscrowd": int(rng.random() < 0.1 and ident > 1),
                    "segmentation": encode(mask),
                }
            )
            truth_masks[ident] = mask
    results, result_masks = [], []
    for a in annotations:
        if rng.random() < 0.8:
            shifted = np.roll(truth_masks[a["id"]], int(rng.integers(-3, 4)), axis=1)
            results.append({**_result(a, shifted, rng)})
            result_masks.append(shifted)
    for image in images:
        for _ in range(int(rng.integers(0, 3))):
            stray = _blob(rng, height, width)
            results.append(_result({"image_id": image["id"], "category_id": 1}, stray, rng))
            result_masks.append(stray)
    gt = {"images": images, "categories": categories, "annotations": annotations}
    return gt, results, truth_masks, result_masks


def _result(a: dict[str, Any], mask: Any, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "image_id": a["image_id"],
        "category_id": a["category_id"],
        "segmentation": encode(mask),
        "score": float(rng.random()),
    }


def test_every_mask_statistic_is_pycocotools_and_the_definition_on_random_cases() -> None:
    rng = np.random.default_rng(7)
    undefined = 0
    for _ in range(40):
        gt, results, truth_masks, result_masks = random_masks(rng)
        ours = coco_mask_metrics(gt, results)
        library = pycocotools_stats(gt, results, "segm")
        direct_dets = [
            {**r, "area": float(m.sum()), "mask": m}
            for r, m in zip(results, result_masks, strict=True)
        ]

        def overlap(
            det: dict[str, Any], obj: dict[str, Any], crowd: bool, masks: Any = truth_masks
        ) -> float:
            ours, theirs = det["mask"].astype(bool), masks[obj["id"]].astype(bool)
            inter = float((ours & theirs).sum())
            union = float(ours.sum()) if crowd else float((ours | theirs).sum())
            return inter / union if union else 0.0

        direct = coco_reference.coco_stats(gt, direct_dets, overlap)
        assert_all_agree(ours, library, direct, prefix="mask_")
        undefined += int((library == -1).any())
    assert undefined >= 5


# --- by hand --------------------------------------------------------------------------------


def det(box: Sequence[float], score: float, category: int = 1, image: int = 1) -> dict[str, Any]:
    return {"image_id": image, "category_id": category, "bbox": box, "score": score}


def one_image(*boxes: Sequence[float], size: int = 200, **fields: Any) -> dict[str, Any]:
    return {
        "images": [{"id": 1, "width": size, "height": size}],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [
            {"id": i, "image_id": 1, "category_id": 1, "bbox": b, **fields}
            for i, b in enumerate(boxes, start=1)
        ],
    }


SMALL, MEDIUM, LARGE = [10, 10, 20, 20], [60, 10, 50, 50], [10, 80, 100, 100]  # 400, 2500, 10000

# (why, ground truth, detections, every defined statistic worked out by hand: the rest undefined)
BY_HAND = [
    # One object of each size. The small and medium ones are found exactly; the large one by a
    # box shifted 20 pixels: IoU 8000 / 12000 = 2/3, a match at the thresholds .50 to .65 (4 of
    # 10). Past them it is a false positive ranked last, after two hits of the three objects:
    # precision 1 up to recall 2/3, and 67 of the 101 recall points (0 to .66) are below it.
    # AR@1 reads the best detection only: one object of three at every threshold.
    (
        "one of each size",
        one_image(SMALL, MEDIUM, LARGE),
        [det(SMALL, 0.9), det(MEDIUM, 0.8), det([30, 80, 100, 100], 0.7)],
        {
            "map": (4 + 6 * 67 / 101) / 10,
            "map50": 1.0,
            "map75": 67 / 101,
            "map_small": 1.0,
            "map_medium": 1.0,
            "map_large": 0.4,
            "ar1": 1 / 3,
            "ar10": (4 + 6 * 2 / 3) / 10,
            "recall": (4 + 6 * 2 / 3) / 10,
            "ar_small": 1.0,
            "ar_medium": 1.0,
            "ar_large": 0.4,
        },
    ),
    # Eleven objects found exactly, best first: AR@1 finds one, AR@10 ten, AR@100 all.
    (
        "more objects than AR@10 reads",
        one_image(*[[10 + 15 * i, 10, 10, 10] for i in range(11)]),
        [det([10 + 15 * i, 10, 10, 10], 0.9 - 0.05 * i) for i in range(11)],
        {"map": 1.0, "map50": 1.0, "map75": 1.0, "map_small": 1.0, "ar1": 1 / 11}
        | {"ar10": 10 / 11, "recall": 1.0, "ar_small": 1.0},
    ),
    # An area of exactly 32² counts as small and as medium (pycocotools' ranges include both
    # ends); nothing is large.
    (
        "an area of 32 x 32 is small and medium",
        one_image([10, 10, 32, 32]),
        [det([10, 10, 32, 32], 0.5)],
        dict.fromkeys(
            ["map", "map50", "map75", "map_small", "map_medium", "ar1", "ar10", "recall"], 1.0
        )
        | {"ar_small": 1.0, "ar_medium": 1.0},
    ),
    # The annotation's area decides its range, not its box (a segmentation's area is smaller):
    # a 50 x 50 box of area 500 is a small object.
    (
        "the area, not the box",
        one_image(MEDIUM, area=500),
        [det(MEDIUM, 0.5)],
        dict.fromkeys(["map", "map50", "map75", "map_small", "ar1", "ar10", "recall"], 1.0)
        | {"ar_small": 1.0},
    ),
    # A crowd does not take a detection from an object: the detection overlaps the object by
    # 1600 / 1920 = 0.83 (a match from .50 to .80, 7 thresholds of 10) and lies inside the
    # crowd (a crowd's IoU is over the detection's area: 1). Matched to the object first, it
    # is never given to the crowd; past .80 the crowd excuses it. The object is medium.
    (
        "an object before a crowd",
        {
            **one_image([10, 10, 40, 40]),
            "annotations": [
                {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 40, 40]},
                {"id": 2, "image_id": 1, "category_id": 1, "bbox": [5, 5, 60, 60], "iscrowd": 1},
            ],
        },
        [det([10, 10, 48, 40], 0.5)],
        dict.fromkeys(["map", "map_medium", "ar1", "ar10", "recall", "ar_medium"], 0.7)
        | {"map50": 1.0, "map75": 1.0},
    ),
    # No detection: 0 where there is an object to find, undefined where there is none.
    (
        "no detections",
        one_image(LARGE),
        [],
        dict.fromkeys(["map", "map50", "map75", "map_large", "ar1", "ar10", "recall"], 0.0)
        | {"ar_large": 0.0},
    ),
]


@pytest.mark.parametrize(
    ("gt", "dets", "expected"), [c[1:] for c in BY_HAND], ids=[c[0] for c in BY_HAND]
)
def test_the_twelve_statistics_on_cases_worked_out_by_hand(
    gt: dict[str, Any], dets: list[dict[str, Any]], expected: dict[str, float]
) -> None:
    ours = coco_metrics(gt, dets)
    assert ours == pytest.approx(expected, abs=1e-12)
    filled = validate_ground_truth(gt)  # iscrowd and area, as pycocotools needs them
    direct = coco_reference.coco_stats(
        filled, [{**d, "area": d["bbox"][2] * d["bbox"][3]} for d in dets]
    )
    assert_all_agree(ours, pycocotools_stats(filled, dets, "bbox"), direct)
    left_out = undefined_stats(ours, STATS)
    assert set(left_out) == set(NAMES) - set(expected)
    for name, reason in left_out.items():
        area = name.rsplit("_", 1)[1]
        assert reason.startswith(f"no ground-truth object in the {area} range (area ")


def test_undefined_reasons_name_the_range() -> None:
    ours = coco_metrics(one_image(LARGE), [det(LARGE, 0.5)])
    assert undefined_stats(ours, STATS) == {
        "map_small": "no ground-truth object in the small range (area 0 to 1,024 pixels, "
        "not iscrowd)",
        "map_medium": "no ground-truth object in the medium range (area 1,024 to 9,216 "
        "pixels, not iscrowd)",
        "ar_small": "no ground-truth object in the small range (area 0 to 1,024 pixels, "
        "not iscrowd)",
        "ar_medium": "no ground-truth object in the medium range (area 1,024 to 9,216 "
        "pixels, not iscrowd)",
    }


def test_the_task_declares_every_statistic_in_pycocotools_order() -> None:
    """What ``runs show``, reports and the web UI label and order the metrics by."""
    declared = [(m.name, m.label) for m in Detection.metrics]
    box = [(s.name, s.label) for s in STATS]
    masks = [(s.name, s.label) for s in MASK_STATS]
    assert declared[:24] == box + masks
    assert [label for _, label in box] == [
        *("mAP", "mAP@.5", "mAP@.75", "mAP small", "mAP medium", "mAP large"),
        *("AR@1", "AR@10", "AR@100", "AR small", "AR medium", "AR large"),
    ]
    assert [m.name for m in Detection.metrics if m.headline] == ["map"]


def test_a_box_past_the_border_is_clipped_before_it_is_scored() -> None:
    """The object is the image's right-hand 20 pixels; the model's box runs 20 pixels past
    the border. Clipped (what a run scores) it is the object; as given, its IoU is 1/2, a
    match only at .50: mAP 0.1."""
    gt = one_image([80, 10, 20, 10], size=100)
    found = Detections(
        np.array([[80.0, 10.0, 120.0, 20.0]]), np.array([0.9]), np.array([0], dtype=np.int64)
    )
    clipped = to_coco(1, found, Transform.identity(100, 100), [1])
    assert clipped[0]["bbox"] == [80.0, 10.0, 20.0, 10.0]
    assert coco_metrics(gt, clipped)["map"] == pytest.approx(1.0)
    assert coco_metrics(gt, [det([80, 10, 40, 10], 0.9)])["map"] == pytest.approx(0.1)
    as_given = pycocotools_stats(validate_ground_truth(gt), [det([80, 10, 40, 10], 0.9)], "bbox")
    assert math.isclose(as_given[0], 0.1)
