"""Detections from a probability map: DBNet's post-processing (PaddleOCR's ``DBPostProcess``)
with axis-aligned boxes. NumPy only.

A map ``(N, 1, H, W)`` holds one class's probability per pixel (a text detector's). Per sample:

1. pixels whose probability is above ``threshold`` are foreground (DBNet's ``pred > thresh``,
   compared in the map's own precision as NumPy compares it there, ``tasks.threshold``);
2. each 8-connected foreground region is a candidate (8-connected: the outer contours OpenCV's
   ``findContours`` traces, as DBNet finds its regions), the first ``max_candidates`` in raster
   order of their first pixel;
3. a region's box is the axis-aligned box covering its pixels (pixel ``(i, j)`` covers
   ``[j, j + 1) x [i, i + 1)``); one whose shorter side is below ``min_size`` is dropped;
4. its score is the mean probability of its pixels, in float64 (PaddleOCR's ``cv2.mean``);
   one below ``box_threshold``, compared in float64 as PaddleOCR compares it, is dropped;
5. the box is unclipped as DBNet does: grown on every side by ``area * unclip_ratio /
   perimeter`` of the box. DBNet offsets a rotated rectangle (the region's minimum-area one)
   and takes the minimum-area rectangle of the rounded result; for a rectangle that is exactly
   the rectangle grown by that distance on all sides, which is what is done here.

Boxes are axis-aligned, not rotated quadrilaterals: what is scored is COCO's ``bbox`` (an
axis-aligned box), so a rotated box would be reduced to its bounding box anyway, and the
axis-aligned box of the region itself is tighter than that of a rotated rectangle around it.
The region's own mean (DBNet's ``score_mode: slow``) is used rather than the mean over its box
(``fast``): it does not depend on how a box is drawn. DBNet's optional dilation of the
bitmap is not done. Boxes are in map pixels, not rounded; every sample's class is 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pinbench.tasks.detection.errors import BadDetectorOutput
from pinbench.tasks.detection.layouts import Detections
from pinbench.tasks.threshold import above, at_least

LAYOUT = "probability-map"


@dataclass(frozen=True, slots=True)
class Settings:
    """``manifest.ProbabilityMap``'s fields (defaults: PaddleOCR's)."""

    threshold: float = 0.3
    box_threshold: float = 0.5
    unclip_ratio: float = 1.6
    min_size: int = 3
    max_candidates: int = 1000


def check_map(output: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The map as float64 ``(N, 1, H, W)`` of probabilities, or ``BadDetectorOutput``."""
    x = np.asarray(output, dtype=np.float64)
    if x.ndim != 4 or x.shape[1] != 1 or x.shape[2] == 0 or x.shape[3] == 0:
        raise BadDetectorOutput(
            layout=LAYOUT,
            shape=x.shape,
            reason="expected (N, 1, H, W): one probability per pixel of one class",
        )
    bad = ~((x >= 0.0) & (x <= 1.0))  # NaN is neither
    if bad.any():
        where = tuple(int(v[0]) for v in np.nonzero(bad))
        raise BadDetectorOutput(
            layout=LAYOUT,
            shape=x.shape,
            reason=f"value {float(x[where])!r} at {list(where)} (sample {where[0]}) is not a "
            "probability in [0, 1] (a logit map needs the model's sigmoid)",
        )
    return x


def regions(output: npt.ArrayLike, settings: Settings) -> list[Detections]:
    """One ``Detections`` per sample: boxes ``xyxy`` in map pixels, best first."""
    kind = np.asarray(output).dtype
    return [_sample(m[0], settings, kind) for m in check_map(output)]


@dataclass(frozen=True, slots=True)
class Runs:
    """The foreground's horizontal runs in raster order: row, first column, column past the
    end, and each run's region (regions numbered in raster order of their first pixel)."""

    rows: npt.NDArray[np.intp]
    starts: npt.NDArray[np.intp]
    ends: npt.NDArray[np.intp]
    region: npt.NDArray[np.intp]
    count: int


def label(foreground: npt.NDArray[np.bool_]) -> Runs:
    """The 8-connected regions of a 2-D mask, as runs (a union-find over runs: its work grows
    with the runs, not the pixels)."""
    h, w = foreground.shape
    padded = np.zeros((h, w + 2), dtype=np.int8)
    padded[:, 1:-1] = foreground
    step = np.diff(padded, axis=1)
    rows, starts = np.nonzero(step == 1)
    _, ends = np.nonzero(step == -1)
    n = rows.size
    # Runs a (row r - 1) and b (row r) touch, 8-connected, when a.start <= b.end and
    # a.end >= b.start; a key row * stride + column keeps the runs sorted by both ends.
    stride = w + 2
    start_key, end_key = rows * stride + starts, rows * stride + ends
    above = (rows - 1) * stride
    lo = np.searchsorted(end_key, above + starts, side="left")
    hi = np.searchsorted(start_key, above + ends, side="right")
    touching = np.maximum(hi - lo, 0)
    b = np.repeat(np.arange(n), touching)
    first = np.cumsum(touching) - touching
    a = np.repeat(lo, touching) + np.arange(int(touching.sum())) - np.repeat(first, touching)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(a.tolist(), b.tolist(), strict=True):
        ri, rj = root(i), root(j)
        if ri != rj:  # the smaller run index is the root: the region's first run
            parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([root(i) for i in range(n)], dtype=np.intp)
    _, region = np.unique(roots, return_inverse=True)
    return Runs(rows, starts, ends, region.reshape(-1), int(region.max(initial=-1)) + 1)


def _sample(prob: npt.NDArray[np.float64], settings: Settings, dtype: npt.DTypeLike) -> Detections:
    runs = label(above(prob, settings.threshold, dtype=dtype))
    keep = runs.region < settings.max_candidates
    k = min(runs.count, settings.max_candidates)
    rows, starts, ends, region = (
        runs.rows[keep],
        runs.starts[keep],
        runs.ends[keep],
        runs.region[keep],
    )
    x1 = np.full(k, np.inf)
    y1 = np.full(k, np.inf)
    x2 = np.zeros(k)
    y2 = np.zeros(k)
    np.minimum.at(x1, region, starts)
    np.minimum.at(y1, region, rows)
    np.maximum.at(x2, region, ends)
    np.maximum.at(y2, region, rows + 1)
    lengths = ends - starts
    pixels = np.bincount(region, weights=lengths, minlength=k)
    offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    values = prob[np.repeat(rows, lengths), np.repeat(starts, lengths) + offsets]
    scores = np.bincount(np.repeat(region, lengths), weights=values, minlength=k) / np.maximum(
        pixels, 1
    )
    width, height = x2 - x1, y2 - y1
    chosen = (np.minimum(width, height) >= settings.min_size) & at_least(
        scores, settings.box_threshold
    )
    grow = width * height * settings.unclip_ratio / (2.0 * (width + height))
    boxes = np.stack([x1 - grow, y1 - grow, x2 + grow, y2 + grow], axis=1)[chosen]
    scores = scores[chosen]
    order = np.argsort(-scores, kind="stable")
    return Detections(
        boxes[order].reshape(-1, 4), scores[order], np.zeros(order.size, dtype=np.int64)
    )
