"""Whether a run's boxes can be what its declared layout says they are.

A layout that does not match the model's output still decodes into boxes: a raw YOLOX grid
(per anchor its offsets within a grid cell and log sizes, not pixels) read as ``yolov5`` gives
boxes one or two pixels wide in the input's top-left corner; boxes in pixels declared
``normalized`` land thousands of pixels off the input; fractions declared as pixels are under a
pixel wide. Scored, each is a run recorded as a success with an mAP of about 0. So, after the
score threshold and NMS, before the boxes are mapped back onto the image (and clipped to it),
every box the run would score is looked at in the model input's pixels:

- **degenerate**: narrower or shorter than ``MIN_SIDE`` pixels (no area at all included);
- **outside**: no part of it on the model input (right of, below, left of or above it).

When more than ``SHARE`` of them (all samples together) are one or the other, the run fails
(``ImplausibleBoxes``) naming the output, its layout, the counts and one such box. Boxes of
score 0 are not looked at: they are padding (TensorFlow's Object Detection API fills its K
boxes with zeros of score 0), not detections. Legitimate detectors' boxes are many pixels
wide (the smallest anchor of a YOLO head is 8 pixels; YOLOv5's own NMS drops boxes under 2)
and lie on the input, so a few stray boxes never reach the share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pinbench.errors import UserError
from pinbench.tasks.detection.boxes import Transform
from pinbench.tasks.detection.layouts import Detections

MIN_SIDE = 2.0
"""Pixels of the model input: a box narrower or shorter than this is degenerate."""
SHARE = 0.5
"""More than this share of the run's boxes degenerate or outside fails the run."""


class ImplausibleBoxes(UserError):
    """Most of a run's boxes cannot be boxes: the declared layout does not match the output."""

    def __init__(
        self,
        *,
        output: str,
        layout: str,
        boxes: int,
        degenerate: int,
        outside: int,
        example: str,
    ) -> None:
        super().__init__(
            f"output {output!r} read as layout {layout} gives boxes that cannot be right: of "
            f"the {boxes} box(es) it would score (score above 0, after the threshold and NMS), "
            f"{degenerate} are narrower or shorter than {MIN_SIDE:g} pixels of the model input "
            f"and {outside} lie wholly outside it (more than {SHARE:.0%} such fails the run), "
            f"e.g. {example}. Check the detection section's layout, box_format and normalized "
            "against what the model outputs (a raw, undecoded grid is no layout pinbench reads)"
        )
        self.output = output
        self.layout = layout
        self.boxes = boxes
        self.degenerate = degenerate
        self.outside = outside
        self.example = example


@dataclass
class BoxCensus:
    """The run's boxes counted sample by sample (``add``), judged at the end (``check``)."""

    boxes: int = 0
    degenerate: int = 0
    outside: int = 0
    example: str = ""
    """The first such box seen, for the message."""

    def add(self, sample: str, found: Detections, transform: Transform) -> None:
        """One sample's kept detections (model-input ``xyxy``, not yet mapped back); ``sample``
        names it in the message."""
        b = found.boxes[found.scores > 0]
        if not len(b):
            return
        width, height = transform.input_width, transform.input_height
        small = np.minimum(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) < MIN_SIDE
        off = (b[:, 2] <= 0) | (b[:, 3] <= 0) | (b[:, 0] >= width) | (b[:, 1] >= height)
        self.boxes += len(b)
        self.degenerate += int(small.sum())
        self.outside += int((off & ~small).sum())
        bad = np.flatnonzero(small | off)
        if bad.size and not self.example:
            box = ", ".join(f"{v:.4g}" for v in b[bad[0]])
            self.example = (
                f"{sample}'s box [{box}] (x1, y1, x2, y2) in its {width} x {height} input"
            )

    def check(self, *, output: str, layout: str) -> None:
        """Fail (``ImplausibleBoxes``) when more than ``SHARE`` of the boxes cannot be right."""
        if self.degenerate + self.outside > SHARE * self.boxes:
            raise ImplausibleBoxes(
                output=output,
                layout=layout,
                boxes=self.boxes,
                degenerate=self.degenerate,
                outside=self.outside,
                example=self.example,
            )
