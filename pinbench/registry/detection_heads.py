"""The raw detection heads a ``detection`` section may name as its layout, each decoded by
pinbench (``tasks.detection.heads``) from the outputs the model gives, unedited:

- ``yolox``: YOLOX's head before its grid decoding, ``(N, A, 5 + C)``: per anchor of each
  stride's grid (``yolox.strides``), ``x, y`` offsets in cells, ``log w, log h`` in strides,
  objectness and C class probabilities (YOLOX's ONNX export, ddddocr's detector);
- ``gfl``: Generalized Focal Loss heads (PicoDet, NanoDet): per stride one output of class
  probabilities ``(N, A_s, C)`` and one of box distributions ``(N, A_s, 4 * bins)``, the
  distance from the cell's centre to each side as a distribution over ``bins`` bins
  (``gfl.heads``);
- ``ssd``: box deltas ``(N, A, 4)`` against fixed anchors (a ``.npy`` file of the model) with a
  box coder's variances, and class scores ``(N, A, C)`` in the output ``scores`` names
  (``ssd``).

A section is refused on a layout it does not describe, and every field of the ``detection``
section that a layout does not read is refused with it (``check_heads``).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from pinbench import bounds as b
from pinbench.registry.manifest_parts import _Strict, check_relative_path

OutputName = str | Annotated[int, b.PORT_INDEX.meta]
"""A model output's name, or an index into the model's outputs."""
Stride = Annotated[int, b.STRIDE.meta]
Variance = Annotated[float, b.VARIANCE.meta]


class Yolox(_Strict, frozen=True, kw_only=True):
    """YOLOX's grid: the strides of its levels, in the order its anchors are (a level's
    anchors row by row, ``H // stride`` rows of ``W // stride``, as YOLOX's
    ``demo_postprocess`` makes them from the model input's size)."""

    strides: list[Stride] = msgspec.field(default_factory=lambda: [8, 16, 32])

    def __post_init__(self) -> None:
        _check_strides(self.strides)


class GflHead(_Strict, frozen=True, kw_only=True):
    """One level of a GFL head: its class probabilities and its box distributions."""

    scores: OutputName
    """The output of the level's class probabilities, ``(N, A, C)`` (a sigmoid's)."""
    boxes: OutputName
    """The output of the level's box distributions, ``(N, A, 4 * bins)``."""
    stride: Stride


class Gfl(_Strict, frozen=True, kw_only=True):
    """Generalized Focal Loss decoding (PicoDet's ``PicoDetPostProcess``): a level's grid is
    ``ceil(H / stride)`` rows of ``ceil(W / stride)`` cells, a cell's centre
    ``((col + offset) * stride, (row + offset) * stride)``; each side's distance is the
    expectation of the softmax of its ``bins`` values over ``0..bins-1``, times the stride."""

    heads: Annotated[list[GflHead], msgspec.Meta(min_length=1, max_length=16)]
    bins: Annotated[int, b.GFL_BINS.meta] = 8
    """Values per side: ``reg_max + 1`` (PicoDet's and NanoDet's reg_max is 7)."""
    offset: Annotated[float, b.FRACTION.meta] = 0.5
    """Where a cell's centre is, in cells: 0.5 (PicoDet), 0 (NanoDet-Plus)."""

    def __post_init__(self) -> None:
        _check_strides([h.stride for h in self.heads])
        named = [str(n) for h in self.heads for n in (h.scores, h.boxes)]
        twice = sorted({n for n in named if named.count(n) > 1})
        if twice:
            raise ValueError(f"gfl heads name output {twice[0]!r} twice: each output is one part")

    @property
    def outputs(self) -> list[OutputName]:
        return [n for h in self.heads for n in (h.scores, h.boxes)]


class Ssd(_Strict, frozen=True, kw_only=True):
    """SSD's box coder (Caffe's ``DecodeBBox``, torchvision's ``BoxCoder``): with an anchor's
    centre ``(ax, ay)`` and size ``(aw, ah)`` and the deltas ``(dx, dy, dw, dh)``, the box's
    centre is ``(ax + dx * v0 * aw, ay + dy * v1 * ah)`` and its size
    ``(aw * exp(dw * v2), ah * exp(dh * v3))``, ``v`` the variances (torchvision's weights
    ``(10, 10, 5, 5)`` are the variances ``(0.1, 0.1, 0.2, 0.2)``)."""

    anchors: str
    """A ``.npy`` file of the model: ``(A, 4)`` anchors in the section's ``box_format``, in
    the boxes' units (``normalized``: fractions of the input)."""
    variances: Annotated[list[Variance], msgspec.Meta(min_length=4, max_length=4)] = msgspec.field(
        default_factory=lambda: [0.1, 0.1, 0.2, 0.2]
    )
    """``(v0, v1, v2, v3)``: for x, y, w and h."""
    order: Literal["xywh", "yxhw"] = "xywh"
    """The deltas' order: ``xywh`` (Caffe, torchvision), ``yxhw`` (TensorFlow's Object
    Detection API)."""
    activation: Literal["softmax", "sigmoid", "none"]
    """How the scores become probabilities: required, never assumed."""
    background: Annotated[int, b.CTC_BLANK.meta] | None = None
    """The scores' column of the background class, dropped (0 in Caffe's and torchvision's
    SSDs); left out, every column is a class."""

    def __post_init__(self) -> None:
        check_relative_path(self.anchors)
        if not self.anchors.endswith(".npy"):
            raise ValueError(f"ssd anchors {self.anchors!r} must be a .npy file of the model")


def _check_strides(strides: list[int]) -> None:
    if not strides or len(strides) > 16:
        raise ValueError(f"a head has 1 to 16 strides, got {len(strides)}")


HEADS = ("yolox", "gfl", "ssd")
"""The layouts of raw heads, each with its section of the same name."""
