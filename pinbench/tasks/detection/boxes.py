"""Box formats, and the geometry of pre-processing kept per sample so that boxes predicted in
the model's input map back onto the original image.

Formats (``FORMATS``), each four numbers per box, in pixels of the model's input or, when
``normalized``, as fractions of its width (x values) and height (y values):

- ``xyxy``: left, top, right, bottom;
- ``xywh``: left, top, width, height (COCO's ``bbox``);
- ``cxcywh``: centre x, centre y, width, height (YOLO's heads);
- ``yxyx``: top, left, bottom, right (TensorFlow's Object Detection API).

Every pre-processing step that moves pixels is an axis-aligned affine map
``input = original * scale + offset`` per axis; a sample's ``Transform`` is the composition of
its steps (``transform_of``), and ``Transform.to_original`` inverts it and clips to the image.
Step sizes are ``(height, width)`` as in the manifest's ``resize`` and ``crop`` steps; the
image sizes the steps see are ``(width, height)`` as Pillow reports them. Each step computes the
scale from the rounded pixel size it produces (``round(w * s) / w``), as the resize itself does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from pinbench.tasks.detection.errors import BadTransform, UnknownBoxFormat

if TYPE_CHECKING:
    from pinbench.registry import steps

BoxArray = npt.NDArray[np.float64]
"""``(n, 4)`` boxes, float64."""

FORMATS = ("xyxy", "xywh", "cxcywh", "yxyx")
Placement = Literal["center", "top-left"]
PLACEMENTS: tuple[Placement, ...] = ("center", "top-left")


def _as_boxes(boxes: npt.ArrayLike) -> BoxArray:
    out = np.asarray(boxes, dtype=np.float64)
    if out.size == 0:
        return out.reshape(0, 4)
    if out.ndim != 2 or out.shape[1] != 4:
        raise BadTransform(step="boxes", reason=f"expected shape (n, 4), got {list(out.shape)}")
    return out


def _check_format(name: str) -> None:
    if name not in FORMATS:
        raise UnknownBoxFormat(name=name, known=FORMATS)


def to_xyxy(
    boxes: npt.ArrayLike,
    box_format: str,
    *,
    normalized: bool = False,
    size: tuple[int, int] | None = None,
) -> BoxArray:
    """Boxes in ``box_format`` as pixel ``xyxy`` of the model input; ``size`` is the input's
    ``(width, height)``, needed when ``normalized``."""
    _check_format(box_format)
    b = _as_boxes(boxes)
    a, c, d, e = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    if box_format == "xyxy":
        out = np.stack([a, c, d, e], axis=1)
    elif box_format == "xywh":
        out = np.stack([a, c, a + d, c + e], axis=1)
    elif box_format == "cxcywh":
        out = np.stack([a - d / 2, c - e / 2, a + d / 2, c + e / 2], axis=1)
    else:  # yxyx
        out = np.stack([c, a, e, d], axis=1)
    if normalized:
        out = out * _scale_of(size)
    return out


def from_xyxy(
    boxes: npt.ArrayLike,
    box_format: str,
    *,
    normalized: bool = False,
    size: tuple[int, int] | None = None,
) -> BoxArray:
    """The inverse of ``to_xyxy``."""
    _check_format(box_format)
    b = _as_boxes(boxes)
    if normalized:
        b = b / _scale_of(size)
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    if box_format == "xyxy":
        return np.stack([x1, y1, x2, y2], axis=1)
    if box_format == "xywh":
        return np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)
    if box_format == "cxcywh":
        return np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], axis=1)
    return np.stack([y1, x1, y2, x2], axis=1)


def _scale_of(size: tuple[int, int] | None) -> BoxArray:
    if size is None:
        raise BadTransform(step="normalized", reason="normalized boxes need the input size")
    width, height = size
    return np.array([width, height, width, height], dtype=np.float64)


@dataclass(frozen=True, slots=True)
class Affine:
    """One step's map: ``out = in * scale + offset`` per axis, producing ``width x height``."""

    scale_x: float
    scale_y: float
    offset_x: float
    offset_y: float
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Resize:
    """The manifest's ``resize``: to ``size`` (height, width); with ``keep_aspect_ratio``, the
    scale that covers the size on both sides, then a centre crop (``pipeline.resize``)."""

    size: tuple[int, int]
    keep_aspect_ratio: bool = False

    def apply(self, width: int, height: int) -> Affine:
        out_h, out_w = self.size
        if not self.keep_aspect_ratio:
            return Affine(out_w / width, out_h / height, 0.0, 0.0, out_w, out_h)
        s = max(out_h / height, out_w / width)
        new_w, new_h = max(out_w, round(width * s)), max(out_h, round(height * s))
        left, top = (new_w - out_w) // 2, (new_h - out_h) // 2
        return Affine(new_w / width, new_h / height, -left, -top, out_w, out_h)


@dataclass(frozen=True, slots=True)
class Crop:
    """The manifest's ``crop``: the centre ``size`` (height, width)."""

    size: tuple[int, int]

    def apply(self, width: int, height: int) -> Affine:
        out_h, out_w = self.size
        if out_h > height or out_w > width:
            raise BadTransform(
                step="crop", reason=f"crop {out_h}x{out_w} is larger than {height}x{width}"
            )
        left, top = (width - out_w) // 2, (height - out_h) // 2
        return Affine(1.0, 1.0, -left, -top, out_w, out_h)


@dataclass(frozen=True, slots=True)
class MaxDimension:
    """Longest-side resize, aspect kept: the longer side becomes ``size`` (up or down)."""

    size: int

    def apply(self, width: int, height: int) -> Affine:
        s = self.size / max(width, height)
        new_w, new_h = max(1, round(width * s)), max(1, round(height * s))
        return Affine(new_w / width, new_h / height, 0.0, 0.0, new_w, new_h)


@dataclass(frozen=True, slots=True)
class ResizeMultiple:
    """The manifest's ``resize_multiple``: each image to the size its own size gives
    (``step.size_of``); the sides are rounded apart, so x and y scale differently."""

    step: steps.ResizeMultiple

    def apply(self, width: int, height: int) -> Affine:
        new_w, new_h = self.step.size_of(width, height)
        return Affine(new_w / width, new_h / height, 0.0, 0.0, new_w, new_h)


def _check_placement(step: str, placement: str) -> None:
    if placement not in PLACEMENTS:
        raise BadTransform(
            step=step, reason=f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}"
        )


def _pad_offsets(placement: Placement, free_w: int, free_h: int) -> tuple[int, int]:
    if placement == "center":
        # ultralytics' LetterBox: round(dw / 2 - 0.1), which is dw // 2 for whole dw.
        return free_w // 2, free_h // 2
    return 0, 0


@dataclass(frozen=True, slots=True)
class Letterbox:
    """Scale to fit ``size`` (height, width) with the aspect kept, then pad to it: the image at
    the centre (ultralytics' placement; odd padding puts the extra pixel right and bottom) or at
    the top-left corner."""

    size: tuple[int, int]
    placement: Placement = "center"

    def __post_init__(self) -> None:
        _check_placement("letterbox", self.placement)

    def apply(self, width: int, height: int) -> Affine:
        out_h, out_w = self.size
        s = min(out_h / height, out_w / width)
        new_w, new_h = max(1, round(width * s)), max(1, round(height * s))
        left, top = _pad_offsets(self.placement, out_w - new_w, out_h - new_h)
        return Affine(new_w / width, new_h / height, left, top, out_w, out_h)


@dataclass(frozen=True, slots=True)
class PadToSquare:
    """Pad to a square of the longer side, no scaling (NudeNet pads at the bottom and right,
    i.e. the image at the top-left, before resizing the square)."""

    placement: Placement = "top-left"

    def __post_init__(self) -> None:
        _check_placement("pad", self.placement)

    def apply(self, width: int, height: int) -> Affine:
        side = max(width, height)
        left, top = _pad_offsets(self.placement, side - width, side - height)
        return Affine(1.0, 1.0, left, top, side, side)


Step = Resize | Crop | MaxDimension | ResizeMultiple | Letterbox | PadToSquare


@dataclass(frozen=True, slots=True)
class Transform:
    """One sample's geometry: ``input = original * scale + offset`` per axis; ``width`` and
    ``height`` are the original image's, ``input_width`` and ``input_height`` the model's."""

    scale_x: float
    scale_y: float
    offset_x: float
    offset_y: float
    width: int
    height: int
    input_width: int
    input_height: int

    @classmethod
    def identity(cls, width: int, height: int) -> Transform:
        if width <= 0 or height <= 0:
            raise BadTransform(step="image", reason=f"empty image {width}x{height}")
        return cls(1.0, 1.0, 0.0, 0.0, width, height, width, height)

    def then(self, step: Step) -> Transform:
        a = step.apply(self.input_width, self.input_height)
        return Transform(
            self.scale_x * a.scale_x,
            self.scale_y * a.scale_y,
            self.offset_x * a.scale_x + a.offset_x,
            self.offset_y * a.scale_y + a.offset_y,
            self.width,
            self.height,
            a.width,
            a.height,
        )

    def to_input(self, boxes: npt.ArrayLike) -> BoxArray:
        """Original-image ``xyxy`` boxes in model-input pixels (not clipped)."""
        b = _as_boxes(boxes)
        return b * self._scale() + self._offset()

    def to_original(self, boxes: npt.ArrayLike, *, clip: bool = True) -> BoxArray:
        """Model-input ``xyxy`` boxes in original-image pixels, clipped to the image (unless
        ``clip`` is false: a box mask covers the whole box)."""
        b = (_as_boxes(boxes) - self._offset()) / self._scale()
        if not clip:
            return b
        limit = np.array([self.width, self.height, self.width, self.height], dtype=np.float64)
        return np.clip(b, 0.0, limit)

    def _scale(self) -> BoxArray:
        return np.array([self.scale_x, self.scale_y, self.scale_x, self.scale_y])

    def _offset(self) -> BoxArray:
        return np.array([self.offset_x, self.offset_y, self.offset_x, self.offset_y])


def transform_of(width: int, height: int, steps: Sequence[Step]) -> Transform:
    """The composition of ``steps`` applied to an image of ``width x height``."""
    t = Transform.identity(width, height)
    for step in steps:
        t = t.then(step)
    return t
