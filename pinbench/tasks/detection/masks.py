"""Instance masks onto the original image, as COCO run-length encodings.

A detector's mask for one box is a grid of scores, either covering the box itself (``box``:
Mask R-CNN's 15x15 or 28x28 masks, TensorFlow's ``detection_masks``) or covering the model
input (``image``). Either way it is brought onto the original image, thresholded and encoded
with pycocotools' ``mask.encode`` so that ``COCOeval(iouType="segm")`` can score it. Mask scores
are read as float32 (and resized in it), and a pixel is on where its score is at least the
mask threshold, compared in float32 (``tasks.threshold``: a float32 0.5 meets threshold 0.5):

- ``box``: the scores are resized (bilinear) to the box's whole-pixel extent on the original
  image (``floor`` of its left/top, ``ceil`` of its right/bottom, at least one pixel), then
  thresholded and pasted there, clipped to the image (Detectron's ``paste_masks_in_image``);
- ``image``: each original pixel's centre is mapped forward into the model input with the
  sample's ``Transform`` and reads the nearest score of the grid scaled over the input; pixels
  that fall outside the input (cropped away) are background.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

from pinbench.tasks.detection.boxes import Transform
from pinbench.tasks.threshold import at_least

Mask = npt.NDArray[np.uint8]
"""``(height, width)`` of 0/1 on the original image."""


def box_mask(
    scores: npt.NDArray[np.float32],
    box: npt.NDArray[np.float64],
    transform: Transform,
    threshold: float,
) -> Mask:
    """A ``box`` mask (scores over the box ``xyxy``, original-image pixels) on the image."""
    out = np.zeros((transform.height, transform.width), dtype=np.uint8)
    x0, y0 = math.floor(box[0]), math.floor(box[1])
    x1, y1 = max(math.ceil(box[2]), x0 + 1), max(math.ceil(box[3]), y0 + 1)
    grid = Image.fromarray(np.asarray(scores, dtype=np.float32), mode="F")
    resized = np.asarray(grid.resize((x1 - x0, y1 - y0), Image.Resampling.BILINEAR))
    on = at_least(resized, threshold).astype(np.uint8)
    cx0, cy0 = max(x0, 0), max(y0, 0)
    cx1, cy1 = min(x1, transform.width), min(y1, transform.height)
    if cx1 > cx0 and cy1 > cy0:
        out[cy0:cy1, cx0:cx1] = on[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0]
    return out


def image_mask(scores: npt.NDArray[np.float32], transform: Transform, threshold: float) -> Mask:
    """An ``image`` mask (scores over the whole model input) on the original image."""
    rows, cols = original_to_grid(transform, scores.shape[0], scores.shape[1])
    inside = (rows >= 0)[:, None] & (cols >= 0)[None, :]
    picked = scores[np.clip(rows, 0, None)[:, None], np.clip(cols, 0, None)[None, :]]
    return (at_least(picked, threshold) & inside).astype(np.uint8)


def original_to_grid(
    transform: Transform, grid_height: int, grid_width: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each original row and column, the index of the cell of a ``grid_height x
    grid_width`` grid spread over the model input that its pixel centre falls in; -1 where
    it falls outside the input."""

    def axis(
        count: int, scale: float, offset: float, size: int, cells: int
    ) -> npt.NDArray[np.int64]:
        at = (np.arange(count, dtype=np.float64) + 0.5) * scale + offset  # input pixels
        index = np.floor(at * cells / size).astype(np.int64)
        return np.where((at >= 0) & (at < size), np.minimum(index, cells - 1), -1)

    rows = axis(
        transform.height,
        transform.scale_y,
        transform.offset_y,
        transform.input_height,
        grid_height,
    )
    cols = axis(
        transform.width, transform.scale_x, transform.offset_x, transform.input_width, grid_width
    )
    return rows, cols


def encode(mask: Mask) -> dict[str, Any]:
    """COCO's compressed RLE of a 0/1 mask, its ``counts`` as text (JSON-safe)."""
    from pycocotools import mask as coco_mask  # type: ignore[import-untyped]

    rle: dict[str, Any] = coco_mask.encode(np.asfortranarray(mask))
    rle["counts"] = rle["counts"].decode("ascii")
    return rle
