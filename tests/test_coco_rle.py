"""COCO run-length encodings in ground truth are read as pycocotools reads them and must add
up to their image (``detection.rle``): what its C code would silently misread as another mask
is refused, naming the annotation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pinbench.tasks.detection.coco import validate_segmentations
from pinbench.tasks.detection.errors import BadGroundTruth
from pinbench.tasks.detection.rle import compressed_counts, rle_problem


def run_lengths(mask: np.ndarray[Any, Any]) -> list[int]:
    """The reference: alternating runs of 0 and 1 over the mask in column order, from 0."""
    flat = mask.ravel(order="F").tolist()
    counts, current, length = [], 0, 0
    for value in flat:
        if value == current:
            length += 1
        else:
            counts.append(length)
            current, length = value, 1
    counts.append(length)
    return counts


@pytest.mark.parametrize("seed", range(8))
def test_compressed_counts_read_what_pycocotools_wrote(seed: int) -> None:
    from pycocotools import mask as coco_mask  # type: ignore[import-untyped]

    rng = np.random.default_rng(seed)
    height, width = rng.integers(1, 300, size=2)
    mask = (rng.random((height, width)) < rng.random()).astype(np.uint8)
    if seed == 0:
        mask[:] = 1  # one run of 0 pixels, then all of them
    encoded = coco_mask.encode(np.asfortranarray(mask))
    assert compressed_counts(encoded["counts"].decode("ascii")) == run_lengths(mask)
    rle = {"size": [int(height), int(width)], "counts": encoded["counts"].decode("ascii")}
    assert rle_problem(rle, int(height), int(width)) is None


# (why, the RLE of a 4 x 5 image's annotation, the reason's words)
MISREAD = [
    ("another size", {"size": [5, 4], "counts": [20]}, "needs size [4, 5]"),
    ("counts short of the image", {"size": [4, 5], "counts": [5, 5]}, "add up to 10 pixels"),
    ("counts past the image", {"size": [4, 5], "counts": [15, 15]}, "add up to 30 pixels"),
    ("a negative count", {"size": [4, 5], "counts": [25, -5]}, "whole numbers >= 0"),
    ("a fractional count", {"size": [4, 5], "counts": [19.5, 0.5]}, "list of whole numbers"),
    ("a character outside the alphabet", {"size": [4, 5], "counts": "zz"}, "not in pycocotools'"),
    ("a NUL (C stops reading there)", {"size": [4, 5], "counts": "d\x000"}, "not in pycocotools'"),
    ("a number cut off at the end", {"size": [4, 5], "counts": "d0`"}, "not in pycocotools'"),
    ("an empty string", {"size": [4, 5], "counts": ""}, "add up to 0 pixels"),
    ("no counts", {"size": [4, 5]}, "compressed string or a list"),
]


def ground_truth(segmentation: Any) -> dict[str, Any]:
    return {
        "images": [{"id": 1, "width": 5, "height": 4}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2], "iscrowd": 0},
            {
                "id": 2,
                "image_id": 1,
                "category_id": 1,
                "bbox": [0, 0, 2, 2],
                "iscrowd": 0,
                "segmentation": segmentation,
            },
        ],
    }


@pytest.mark.parametrize(("rle", "message"), [c[1:] for c in MISREAD], ids=[c[0] for c in MISREAD])
def test_an_rle_pycocotools_would_misread_is_refused(rle: dict[str, Any], message: str) -> None:
    gt = ground_truth(rle)
    gt["annotations"][0]["segmentation"] = {"size": [4, 5], "counts": [20]}  # all background
    with pytest.raises(BadGroundTruth) as caught:
        validate_segmentations(gt)
    assert caught.value.where == "annotation 2" and message in caught.value.reason


def test_rles_that_add_up_are_accepted() -> None:
    gt = ground_truth({"size": [4, 5], "counts": [4, 2, 14]})
    gt["annotations"][0]["segmentation"] = {"size": [4, 5], "counts": "52="}  # [5, 2, 13]
    assert compressed_counts("52=") == [5, 2, 13]
    assert validate_segmentations(gt) is gt
