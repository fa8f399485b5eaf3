"""A declared layout that cannot match the detector's output fails the run (issue 47, item 6):
most of the boxes it would score are under 2 pixels of the model input wide or tall, or lie
wholly off the input (``detection.plausible``). Read as ``yolov5``, a raw YOLOX grid (a real
detector's output re-encoded) gives boxes of one or two pixels in the input's corner and was
recorded as a succeeded run of mAP 0; the real detector's own output, and the outputs of the
other test detectors (their files' end-to-end runs), pass."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pinbench.catalog import nudenet
from pinbench.tasks.detection.boxes import PadToSquare, Resize, Step, Transform, transform_of
from pinbench.tasks.detection.layouts import Detections, decode
from pinbench.tasks.detection.plausible import MIN_SIDE, SHARE, BoxCensus, ImplausibleBoxes
from tests import yolox_grid
from tests.test_detection_nudenet import model_output

INPUT = Transform(1.0, 1.0, 0.0, 0.0, 640, 480, 640, 480)
"""A 640 x 480 image fed as it is."""


def found(*boxes: list[float], scores: list[float] | None = None) -> Detections:
    b = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    s = np.array(scores if scores is not None else [0.9] * len(b), dtype=np.float64)
    return Detections(b, s, np.zeros(len(b), dtype=np.int64))


GOOD = [100.0, 120.0, 180.0, 220.0]

# (why, each sample's kept boxes (x1, y1, x2, y2 in the 640 x 480 input), whether the run fails)
CASES: list[tuple[str, list[Detections], bool]] = [
    ("boxes on the input", [found(GOOD, [0, 0, 640, 480]), found([5, 5, 9, 9])], False),
    # A box running past the border is clipped later: part of it is on the input.
    ("partly past the border", [found([600, 400, 700, 500], [-30, -20, 10, 10])], False),
    # Fractions of the input read as pixels (`normalized` left out): under a pixel each.
    ("fractions read as pixels", [found([0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.9, 0.7])], True),
    # Pixels read as fractions (`normalized: true` on pixel boxes): scaled hundreds of times.
    ("pixels read as fractions", [found([v * 640 for v in GOOD], [v * 480 for v in GOOD])], True),
    ("a box reversed (x2 < x1) or empty", [found([50, 50, 40, 60], [10, 10, 10, 30])], True),
    (f"a side of exactly {MIN_SIDE:g} pixels", [found([10, 10, 12, 12])], False),
    ("wholly left of the input", [found([-50, 10, -1, 60])], True),
    ("touching the right edge from outside", [found([640, 10, 700, 60])], True),
    # Half is not more than half: a stray box or two never fail a run.
    (
        "half of the boxes degenerate",
        [found(GOOD, GOOD), found([1, 1, 1.5, 9], [300, 300, 300.5, 301])],
        False,
    ),
    (
        "three of five degenerate or off the input",
        [found(GOOD, GOOD), found([1, 1, 1.5, 9], [300, 300, 300.5, 301], [900, 10, 990, 60])],
        True,
    ),
    # Boxes of score 0 are padding (TensorFlow's Object Detection API pads with zeros).
    (
        "zero boxes of score 0 are padding",
        [found(GOOD, [0, 0, 0, 0], [0, 0, 0, 0], scores=[0.9, 0.0, 0.0])],
        False,
    ),
    ("no boxes at all", [found(), found()], False),
]


@pytest.mark.parametrize(("samples", "fails"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_boxes_that_cannot_be_boxes_fail_the_run(samples: list[Detections], fails: bool) -> None:
    census = BoxCensus()
    for i, sample in enumerate(samples):
        census.add(f"images/{i}.png", sample, INPUT)
    if not fails:
        census.check(output="boxes", layout="separate")
        return
    with pytest.raises(ImplausibleBoxes) as caught:
        census.check(output="boxes", layout="separate")
    assert caught.value.degenerate + caught.value.outside > SHARE * caught.value.boxes
    assert "output 'boxes' read as layout separate gives boxes that cannot be right" in str(
        caught.value
    )


def census_of(outputs: list[Any], layout: str) -> BoxCensus:
    """NudeNet's settings (threshold 0.25, NMS over every class at 0.45) over the photos'
    outputs."""
    census = BoxCensus()
    for photo, output in zip(nudenet.PHOTOS, outputs, strict=True):
        (decoded,) = decode(output, layout)
        kept = decoded.suppressed(
            iou_threshold=nudenet.IOU_THRESHOLD,
            score_threshold=nudenet.SCORE_THRESHOLD,
            max_detections=100,
            class_agnostic=True,
        )
        steps: list[Step] = [PadToSquare("top-left"), Resize((nudenet.SIZE, nudenet.SIZE))]
        census.add(photo.name, kept, transform_of(photo.width, photo.height, steps))
    return census


def test_a_raw_yolox_grid_read_as_yolov5_fails_and_the_real_output_passes() -> None:
    outputs = [model_output(photo) for photo in nudenet.PHOTOS]
    census_of(outputs, "yolov8").check(output="output0", layout="yolov8")  # the real boxes
    raw = census_of([yolox_grid.encode(o) for o in outputs], "yolov5")
    with pytest.raises(ImplausibleBoxes) as caught:
        raw.check(output="output0", layout="yolov5")
    error = caught.value
    # Every box kept is a pixel or two wide, at the input's top-left corner: all but three of
    # the 22 under 2 pixels (the astronaut's three best are 2.1 wide or tall).
    assert error.boxes > 0 and error.degenerate >= 0.8 * error.boxes and error.outside == 0
    message = str(error)
    assert message.startswith("output 'output0' read as layout yolov5 gives boxes that cannot")
    assert f"{error.degenerate} are narrower or shorter than 2 pixels of the model input" in message
    assert "e.g. astronaut's box [" in message and "in its 320 x 320 input" in message


def test_the_encoding_is_yolox_s() -> None:
    """Decoding the raw grid as YOLOX does gives the detector's boxes back."""
    output = model_output(nudenet.PHOTOS[0])
    raw = yolox_grid.encode(output)
    strides, cells = yolox_grid.grid()
    xy = (raw[0, :, 0:2] + cells) * strides
    wh = np.exp(raw[0, :, 2:4]) * strides
    assert np.allclose(np.concatenate([xy, wh], axis=1), output[0, :4].T, rtol=1e-5, atol=1e-3)
