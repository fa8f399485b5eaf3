"""Raw detection heads decoded into each sample's candidate boxes (model-input ``xyxy``),
scores and classes, before the score threshold and NMS, each as its own package decodes it
(``registry.detection_heads`` declares them):

- ``yolox`` (YOLOX's ``demo_postprocess``, as ddddocr ships it): level by level, a grid of
  ``H // s`` rows of ``W // s`` cells for each stride ``s``, anchors row by row; a box's
  centre is ``(x + col, y + row) * s``, its size ``(exp(log w), exp(log h)) * s``; its score
  objectness x class probability, its class the best one (YOLOX's ``postprocess``);
- ``gfl`` (PaddleDetection's ``PicoDetPostProcess``, as rapid-layout ships it): each level a
  grid of ``ceil(H / s)`` rows of ``ceil(W / s)`` cells, centre ``((col + offset) * s, (row +
  offset) * s)``; each side's distance the expectation of the softmax of its ``bins`` values
  over ``0..bins-1``, times ``s``; box ``(cx - left, cy - top, cx + right, cy + bottom)``;
- ``ssd`` (Caffe's ``DecodeBBox``, torchvision's ``BoxCoder.decode_single``): centre
  ``a_c + d_c * v * a_size``, size ``a_size * exp(d_size * v)`` per axis, the deltas in
  ``order``; scores through the declared activation, the background column dropped.

GFL and SSD score every class of every anchor (PaddleDetection's and torchvision's
multi-class NMS): each (anchor, class) pair whose probability reaches the score threshold
(compared in the scores output's precision, ``tasks.threshold``) is a candidate of its class.
A head's probabilities must be probabilities (in [0, 1]; a logit without its sigmoid fails the
run, naming the output), its anchor count the one the grid gives for the model input's size,
and every value finite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.registry.detection_heads import Gfl, Ssd
from pinbench.tasks.detection.boxes import BoxArray, to_xyxy
from pinbench.tasks.detection.errors import BadDetectorOutput
from pinbench.tasks.detection.layouts import Detections
from pinbench.tasks.threshold import at_least, precision

Floats = npt.NDArray[np.float64]
MAX_ANCHORS = 1 << 24
"""The most anchors an SSD's anchors file may hold (16.7M; SSD300 has 8,732)."""


def _values(output: npt.ArrayLike, layout: str, what: str) -> Floats:
    x = np.asarray(output, dtype=np.float64)
    if x.ndim != 3:
        raise BadDetectorOutput(
            layout=layout, shape=x.shape, reason=f"{what} must have 3 dimensions (N, anchors, ...)"
        )
    bad = ~np.isfinite(x)
    if bad.any():
        where = [int(v[0]) for v in np.nonzero(bad)]
        raise BadDetectorOutput(
            layout=layout,
            shape=x.shape,
            reason=f"{what}: value {float(x[tuple(where)])!r} at {where} is not a finite number",
        )
    return x


def _probabilities(x: Floats, layout: str, what: str, shape: tuple[int, ...] | None = None) -> None:
    outside = (x < 0) | (x > 1)
    if outside.any():
        raise BadDetectorOutput(
            layout=layout,
            shape=x.shape if shape is None else shape,
            reason=f"{what}: {float(x[outside][0])!r} is not a probability in [0, 1] (a logit "
            "without its sigmoid?)",
        )


def _anchor_count(x: Floats, expected: int, layout: str, what: str, why: str) -> None:
    if x.shape[1] != expected:
        raise BadDetectorOutput(
            layout=layout, shape=x.shape, reason=f"{what} has {x.shape[1]} anchors, {why}"
        )


# ---------------------------------------------------------------- yolox


def yolox_grid(width: int, height: int, strides: Sequence[int]) -> tuple[Floats, Floats]:
    """Each anchor's cell ``(A, 2)`` (column, row) and stride ``(A, 1)``, level by level."""
    cells, steps = [], []
    for s in strides:
        rows, cols = height // s, width // s
        xv, yv = np.meshgrid(np.arange(cols), np.arange(rows))
        cells.append(np.stack([xv, yv], axis=2).reshape(-1, 2))
        steps.append(np.full((rows * cols, 1), s))
    return (
        np.concatenate(cells).astype(np.float64),
        np.concatenate(steps).astype(np.float64),
    )


def decode_yolox(
    output: npt.ArrayLike, size: tuple[int, int], strides: Sequence[int]
) -> list[Detections]:
    """``(N, A, 5 + C)`` as each sample's best-class boxes; ``size``: the input's (w, h)."""
    x = _values(output, "yolox", "the output")
    if x.shape[2] <= 5:
        raise BadDetectorOutput(
            layout="yolox", shape=x.shape, reason="expected 5 + classes values per anchor"
        )
    cells, steps = yolox_grid(*size, strides)
    _anchor_count(
        x,
        len(cells),
        "yolox",
        "the output",
        f"a {size[0]} x {size[1]} input with strides {list(strides)} gives {len(cells)}",
    )
    _probabilities(x[..., 4:], "yolox", "objectness and class probabilities", x.shape)
    kind = precision(np.asarray(output).dtype)
    out = []
    for rows in x:
        centre = (rows[:, 0:2] + cells) * steps
        with np.errstate(over="ignore"):
            extent = np.exp(rows[:, 2:4]) * steps
        boxes = np.concatenate([centre, extent], axis=1)
        _finite_boxes(boxes, "yolox", x.shape)
        scores = rows[:, 5:] * rows[:, 4:5]
        classes = np.argmax(scores, axis=1).astype(np.int64)
        best = np.take_along_axis(scores, classes[:, None], axis=1)[:, 0]
        out.append(Detections(to_xyxy(boxes, "cxcywh"), best, classes, None, kind))
    return out


def _finite_boxes(boxes: Floats, layout: str, shape: tuple[int, ...]) -> None:
    if not np.isfinite(boxes).all():
        raise BadDetectorOutput(
            layout=layout, shape=shape, reason="a box's size overflows (exp of a value past 709)"
        )


# ---------------------------------------------------------------- gfl


def gfl_centres(width: int, height: int, stride: int, offset: float) -> Floats:
    """A level's cell centres ``(A, 2)``, row by row."""
    rows, cols = math.ceil(height / stride), math.ceil(width / stride)
    xv, yv = np.meshgrid(np.arange(cols, dtype=np.float64), np.arange(rows, dtype=np.float64))
    return np.stack([(xv.ravel() + offset) * stride, (yv.ravel() + offset) * stride], axis=1)


def decode_gfl(
    levels: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
    names: Sequence[tuple[str, str]],
    section: Gfl,
    size: tuple[int, int],
    floor: float,
) -> list[Detections]:
    """Each level's ``(scores, boxes)`` outputs as each sample's (anchor, class) candidates
    scoring at least ``floor``; ``names``: each level's output names, for messages."""
    bins = section.bins
    boxes_all: list[Floats] = []
    scores_all: list[Floats] = []
    count = None
    for (scores, boxes), (scores_name, boxes_name), head in zip(
        levels, names, section.heads, strict=True
    ):
        s = _values(scores, "gfl", f"output {scores_name!r}")
        d = _values(boxes, "gfl", f"output {boxes_name!r}")
        centres = gfl_centres(*size, head.stride, section.offset)
        why = f"stride {head.stride} on a {size[0]} x {size[1]} input gives {len(centres)}"
        _anchor_count(s, len(centres), "gfl", f"output {scores_name!r}", why)
        _anchor_count(d, len(centres), "gfl", f"output {boxes_name!r}", why)
        if d.shape[2] != 4 * bins or s.shape[0] != d.shape[0]:
            raise BadDetectorOutput(
                layout="gfl",
                shape=d.shape,
                reason=f"output {boxes_name!r} must be (N, anchors, 4 x {bins} bins) beside "
                f"its scores {list(s.shape)}",
            )
        if count is not None and s.shape[2] != count:
            raise BadDetectorOutput(
                layout="gfl",
                shape=s.shape,
                reason=f"output {scores_name!r} scores {s.shape[2]} classes, another level {count}",
            )
        count = s.shape[2]
        _probabilities(s, "gfl", f"output {scores_name!r}")
        logits = d.reshape(d.shape[0], d.shape[1], 4, bins)
        shifted = np.exp(logits - logits.max(axis=3, keepdims=True))
        distance = (shifted / shifted.sum(axis=3, keepdims=True)) @ np.arange(bins) * head.stride
        corners = np.concatenate([centres, centres], axis=1)
        boxes_all.append(corners[None] + np.array([-1.0, -1.0, 1.0, 1.0]) * distance)
        scores_all.append(s)
    boxes_n, scores_n = np.concatenate(boxes_all, axis=1), np.concatenate(scores_all, axis=1)
    kind = precision(np.result_type(*(np.asarray(scores).dtype for scores, _ in levels)))
    return [every_class(b, s, floor, kind) for b, s in zip(boxes_n, scores_n, strict=True)]


def every_class(
    boxes: BoxArray, scores: Floats, floor: float, dtype: npt.DTypeLike = np.float64
) -> Detections:
    """Each (anchor, class) pair scoring at least ``floor`` as a detection of that class, in
    anchor order then class order; ``dtype``: the scores output's, which ``floor`` is compared
    in."""
    anchor, cls = np.nonzero(at_least(scores, floor, dtype=dtype))
    kind = precision(dtype)
    return Detections(boxes[anchor], scores[anchor, cls], cls.astype(np.int64), None, kind)


# ---------------------------------------------------------------- ssd


def read_anchors(path: Path, box_format: str, *, where: str) -> Floats:
    """An SSD's anchors file, ``(A, 4)`` numbers in ``box_format``, as ``(A, 4)`` centres and
    sizes (``cx, cy, w, h``); refused (``BadDetectorOutput``) unless every anchor is finite
    with a positive width and height. Read with ``allow_pickle=False``, memory-mapped."""

    def refuse(reason: str, shape: tuple[int, ...] = ()) -> BadDetectorOutput:
        return BadDetectorOutput(layout="ssd", shape=shape, reason=f"anchors {where}: {reason}")

    try:
        raw = np.load(path, allow_pickle=False, mmap_mode="r")
    except (ValueError, OSError, EOFError) as exc:
        raise refuse(f"not a .npy array ({exc})") from None
    shape = tuple(int(d) for d in raw.shape)
    if len(shape) != 2 or shape[1] != 4 or not 1 <= shape[0] <= MAX_ANCHORS:
        raise refuse(f"must be (anchors, 4), 1 to {MAX_ANCHORS} anchors", shape)
    if raw.dtype.kind not in "iuf":
        raise refuse(f"holds {raw.dtype}, not numbers", shape)
    xyxy = to_xyxy(np.asarray(raw, dtype=np.float64), box_format)
    centres = (xyxy[:, :2] + xyxy[:, 2:]) / 2
    sizes = xyxy[:, 2:] - xyxy[:, :2]
    if not (np.isfinite(xyxy).all() and (sizes > 0).all()):
        raise refuse("every anchor must be finite with a positive width and height", shape)
    return np.concatenate([centres, sizes], axis=1)


def decode_ssd(
    deltas: npt.ArrayLike,
    scores: npt.ArrayLike,
    anchors: Floats,
    section: Ssd,
    names: tuple[str, str],
    floor: float,
) -> list[Detections]:
    """Box deltas ``(N, A, 4)`` and scores ``(N, A, C)`` as each sample's (anchor, class)
    candidates scoring at least ``floor``, boxes ``xyxy`` in the anchors' units."""
    d = _values(deltas, "ssd", f"output {names[0]!r}")
    s = _values(scores, "ssd", f"output {names[1]!r}")
    kind = precision(np.asarray(scores).dtype)
    why = f"the anchors file holds {len(anchors)}"
    _anchor_count(d, len(anchors), "ssd", f"output {names[0]!r}", why)
    _anchor_count(s, len(anchors), "ssd", f"output {names[1]!r}", why)
    if d.shape[2] != 4 or s.shape[0] != d.shape[0]:
        raise BadDetectorOutput(
            layout="ssd", shape=d.shape, reason=f"output {names[0]!r} must be (N, anchors, 4)"
        )
    if section.activation == "softmax":
        e = np.exp(s - s.max(axis=2, keepdims=True))
        s = e / e.sum(axis=2, keepdims=True)
    elif section.activation == "sigmoid":
        s = 1.0 / (1.0 + np.exp(-s))
    else:
        _probabilities(s, "ssd", f"output {names[1]!r}")
    if section.background is not None:
        if section.background >= s.shape[2]:
            raise BadDetectorOutput(
                layout="ssd",
                shape=s.shape,
                reason=f"background column {section.background} is past its {s.shape[2]} columns",
            )
        s = np.delete(s, section.background, axis=2)
    if section.order == "yxhw":
        d = d[..., [1, 0, 3, 2]]
    v = np.asarray(section.variances, dtype=np.float64)
    centre = anchors[:, :2] + d[..., :2] * v[:2] * anchors[:, 2:]
    with np.errstate(over="ignore"):
        extent = anchors[:, 2:] * np.exp(d[..., 2:] * v[2:])
    out = []
    for c, e, sample in zip(centre, extent, s, strict=True):
        boxes = np.concatenate([c, e], axis=1)
        _finite_boxes(boxes, "ssd", d.shape)
        out.append(every_class(to_xyxy(boxes, "cxcywh"), sample, floor, kind))
    return out
