"""Object detection components (``pinbench.tasks.detection``): box formats, the geometry of
pre-processing and its inverse, per-class NMS, packed YOLO outputs, and COCO metrics through
pycocotools on cases worked out by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pinbench.registry.ports import Detection, Input, Output
from pinbench.tasks.detection.boxes import (
    FORMATS,
    Crop,
    Letterbox,
    MaxDimension,
    PadToSquare,
    Resize,
    Transform,
    from_xyxy,
    to_xyxy,
    transform_of,
)
from pinbench.tasks.detection.coco import coco_metrics, to_coco, validate_ground_truth
from pinbench.tasks.detection.decoding import check_columns
from pinbench.tasks.detection.errors import (
    BadDetections,
    BadDetectorOutput,
    BadGroundTruth,
    BadTransform,
    UnknownBoxFormat,
    UnknownLayout,
)
from pinbench.tasks.detection.layouts import Detections, decode, decode_separate
from pinbench.tasks.detection.nms import iou, nms
from pinbench.tasks.detection.score import CategoryMap, DetectionSetupError, Plan
from pinbench.tasks.detection.truth import GroundTruth

# --- box formats ---------------------------------------------------------------------------

XYXY = np.array([[10.0, 20.0, 50.0, 80.0], [0.0, 0.0, 1.0, 2.0]])


@pytest.mark.parametrize(
    ("box_format", "boxes"),
    [
        ("xyxy", [[10, 20, 50, 80], [0, 0, 1, 2]]),
        ("xywh", [[10, 20, 40, 60], [0, 0, 1, 2]]),  # COCO
        ("cxcywh", [[30, 50, 40, 60], [0.5, 1, 1, 2]]),  # YOLO
        ("yxyx", [[20, 10, 80, 50], [0, 0, 2, 1]]),  # TensorFlow
    ],
)
def test_each_format_reads_as_the_same_pixel_boxes(box_format: str, boxes: list[Any]) -> None:
    assert to_xyxy(boxes, box_format).tolist() == XYXY.tolist()
    assert from_xyxy(XYXY, box_format).tolist() == np.asarray(boxes, dtype=float).tolist()


@pytest.mark.parametrize("box_format", FORMATS)
def test_normalized_boxes_are_fractions_of_the_input_width_and_height(box_format: str) -> None:
    size = (200, 100)  # (width, height)
    normalized = from_xyxy(XYXY, box_format, normalized=True, size=size)
    assert np.allclose(to_xyxy(normalized, box_format, normalized=True, size=size), XYXY)
    assert to_xyxy([[0.5, 0.5, 1.0, 1.0]], "xyxy", normalized=True, size=size).tolist() == [
        [100, 50, 200, 100]
    ]


def test_unknown_box_format_and_normalized_without_a_size_are_refused() -> None:
    with pytest.raises(UnknownBoxFormat, match="unknown box format 'ltrb'"):
        to_xyxy(XYXY, "ltrb")
    with pytest.raises(BadTransform, match="need the input size"):
        to_xyxy(XYXY, "xyxy", normalized=True)


# --- transforms ----------------------------------------------------------------------------


def test_letterbox_centres_the_scaled_image_and_maps_a_box_back_exactly() -> None:
    # 640x480 into 320x320: scale 0.5, the image is 320x240, 40 rows of padding above and below.
    t = transform_of(640, 480, [Letterbox((320, 320))])
    assert (t.scale_x, t.scale_y, t.offset_x, t.offset_y) == (0.5, 0.5, 0.0, 40.0)
    assert (t.input_width, t.input_height) == (320, 320)
    box = [[100.0, 200.0, 300.0, 400.0]]
    assert t.to_input(box).tolist() == [[50.0, 140.0, 150.0, 240.0]]
    assert t.to_original([[50.0, 140.0, 150.0, 240.0]]).tolist() == box


def test_letterbox_at_the_top_left_pads_only_right_and_bottom() -> None:
    t = transform_of(640, 480, [Letterbox((320, 320), placement="top-left")])
    assert (t.offset_x, t.offset_y) == (0.0, 0.0)


def test_letterbox_odd_padding_puts_the_extra_pixel_right_and_bottom() -> None:
    # 100x51 into 64x64: scale 0.64, 64x33 (32.64 rounded), 31 rows free: 15 above, 16 below.
    t = transform_of(100, 51, [Letterbox((64, 64))])
    assert t.offset_y == 15
    assert t.scale_y == 33 / 51  # the scale the rounded resize really applied


def test_plain_resize_scales_each_axis() -> None:
    t = transform_of(640, 480, [Resize((240, 320))])
    assert t.to_original([[0.0, 0.0, 320.0, 240.0]]).tolist() == [[0.0, 0.0, 640.0, 480.0]]


def test_keep_aspect_resize_then_centre_crop_as_the_pipeline_does() -> None:
    # image_steps.resize with keep_aspect_ratio: cover 224x224 (scale 224/480), 299x224, crop the
    # centre 224 columns: 37 columns cut on the left.
    t = transform_of(640, 480, [Resize((224, 224), keep_aspect_ratio=True)])
    assert (t.offset_x, t.offset_y) == (-37.0, 0.0)
    assert t.scale_x == 299 / 640
    # A box over the whole input is the centre of the photo.
    back = t.to_original([[0.0, 0.0, 224.0, 224.0]])
    assert np.allclose(back, [[37 * 640 / 299, 0.0, 261 * 640 / 299, 480.0]])


@pytest.mark.parametrize("keep_aspect_ratio", [False, True])
def test_the_transform_follows_the_pixels_of_the_pipelines_resize(keep_aspect_ratio: bool) -> None:
    # A white rectangle on black, through pinbench's own resize step: where it lands is where
    # the transform puts its box (to a pixel: the resampling blurs the edges).
    from pinbench.registry import steps
    from pinbench.worker import image_steps

    image = np.zeros((1, 480, 640, 1), dtype=np.uint8)
    image[0, 200:400, 100:300] = 255  # xyxy [100, 200, 300, 400]
    step = steps.Resize(size=(224, 224), method="nearest", keep_aspect_ratio=keep_aspect_ratio)
    out = np.asarray(image_steps.resize(image, step)[0, ..., 0], dtype=np.float64)
    rows, cols = np.nonzero(out > 127)
    landed = [cols.min(), rows.min(), cols.max() + 1, rows.max() + 1]
    t = transform_of(640, 480, [Resize((224, 224), keep_aspect_ratio=keep_aspect_ratio)])
    assert np.allclose(t.to_input([[100, 200, 300, 400]])[0], landed, atol=1.0)


@pytest.mark.parametrize(
    ("manifest_step", "box_step", "size"),
    [
        ({"pad": {"placement": "top-left"}}, PadToSquare("top-left"), (480, 640)),
        ({"pad": {"placement": "center"}}, PadToSquare("center"), (480, 640)),
        ({"pad": {"placement": "center"}}, PadToSquare("center"), (641, 480)),  # odd padding
        (
            {"letterbox": {"size": [320, 320], "method": "nearest"}},
            Letterbox((320, 320)),
            (480, 640),
        ),
        (
            {"letterbox": {"size": [320, 256], "placement": "top-left", "method": "nearest"}},
            Letterbox((320, 256), "top-left"),
            (641, 480),
        ),
    ],
)
def test_the_transform_follows_the_pixels_of_the_pipelines_pad_and_letterbox(
    manifest_step: dict[str, Any], box_step: Any, size: tuple[int, int]
) -> None:
    # The same white rectangle through pinbench's pad and letterbox steps (pixel values 0 and
    # 255 are never the padding's 7): the canvas has the transform's size, and the rectangle
    # lands where the transform puts its box.
    import msgspec

    from pinbench.registry import ports, steps
    from pinbench.worker import pipeline

    height, width = size
    image = np.zeros((1, height, width, 1), dtype=np.uint8)
    image[0, 200:400, 100:300] = 255  # xyxy [100, 200, 300, 400]
    key, fields = next(iter(manifest_step.items()))
    step = msgspec.convert({key: {**fields, "value": 7}}, steps.InputStep)
    spec = ports.Input(name="x", element_type="uint8", steps=[step])
    out = np.asarray(pipeline.preprocess(image, spec)[0, ..., 0], dtype=np.float64)
    t = transform_of(width, height, [box_step])
    assert out.shape == (t.input_height, t.input_width)
    rows, cols = np.nonzero(out > 127)
    landed = [cols.min(), rows.min(), cols.max() + 1, rows.max() + 1]
    assert np.allclose(t.to_input([[100, 200, 300, 400]])[0], landed, atol=1.0)
    # the padding is where the transform says the image is not
    x1, y1, x2, y2 = (round(float(v)) for v in t.to_input([[0, 0, width, height]])[0])
    assert np.all(out[:y1, :] == 7) and np.all(out[:, x2:] == 7)
    assert np.all(out[y2:, :] == 7) and np.all(out[:, :x1] == 7)


def test_longest_side_resize_keeps_the_aspect() -> None:
    t = transform_of(1000, 500, [MaxDimension(800)])
    assert (t.input_width, t.input_height, t.scale_x, t.scale_y) == (800, 400, 0.8, 0.8)


def test_steps_compose_into_one_map() -> None:
    # Pad to a square at the top-left, then resize the square (NudeNet's pipeline) is a scale of
    # 320 / the longer side with no offset.
    t = transform_of(640, 427, [PadToSquare(), Resize((320, 320))])
    assert (t.scale_x, t.scale_y, t.offset_x, t.offset_y) == (0.5, 0.5, 0.0, 0.0)
    # Resize, then crop: offsets are in the resized image's pixels.
    t = transform_of(200, 100, [Resize((200, 400)), Crop((100, 300))])
    assert (t.scale_x, t.scale_y, t.offset_x, t.offset_y) == (2.0, 2.0, -50.0, -50.0)
    box = [[10.0, 20.0, 110.0, 70.0]]
    assert t.to_original(t.to_input(box)).tolist() == box


def test_boxes_mapped_back_are_clipped_to_the_image() -> None:
    t = transform_of(640, 480, [Letterbox((320, 320))])
    # A box reaching into the padding ends at the image's edge.
    assert t.to_original([[-10.0, 0.0, 330.0, 320.0]]).tolist() == [[0.0, 0.0, 640.0, 480.0]]


def test_impossible_geometry_is_refused() -> None:
    with pytest.raises(BadTransform, match="crop 300x300 is larger than 100x200"):
        transform_of(200, 100, [Crop((300, 300))])
    with pytest.raises(BadTransform, match="empty image 0x10"):
        Transform.identity(0, 10)
    with pytest.raises(BadTransform, match="placement must be one of center, top-left"):
        Letterbox((10, 10), placement="middle")  # type: ignore[arg-type]


# --- NMS -----------------------------------------------------------------------------------


def test_iou_of_overlapping_disjoint_and_empty_boxes() -> None:
    assert iou([0, 0, 10, 10], [[0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30]]).tolist() == [
        1.0,
        1 / 3,  # 50 / (100 + 100 - 50)
        0.0,
    ]
    assert iou([0, 0, 0, 0], [[0, 0, 0, 0]]).tolist() == [0.0]


def test_nms_worked_example() -> None:
    boxes = np.array(
        [
            [0, 0, 10, 10],  # 0: class 0, 0.9: kept, the best
            [1, 0, 11, 10],  # 1: class 0, 0.8: IoU 90/110 = 0.82 with 0: suppressed
            [5, 0, 15, 10],  # 2: class 0, 0.7: IoU 1/3 with 0: kept
            [0, 0, 10, 10],  # 3: class 1, 0.85: another class, same place: kept
            [50, 50, 60, 60],  # 4: class 0, 0.1: below the score threshold
            [20, 20, 30, 30],  # 5: class 1, 0.7: ties with 2, a later index: after it
        ],
        dtype=float,
    )
    scores = [0.9, 0.8, 0.7, 0.85, 0.1, 0.7]
    classes = [0, 0, 0, 1, 0, 1]
    kept = nms(boxes, scores, classes, iou_threshold=0.5, score_threshold=0.2)
    assert kept.tolist() == [0, 3, 2, 5]
    best_two = nms(boxes, scores, classes, iou_threshold=0.5, score_threshold=0.2, max_detections=2)
    assert best_two.tolist() == [0, 3]
    # At IoU threshold 0.3 the box at IoU 1/3 goes too (suppressed when IoU > threshold).
    assert nms(boxes, scores, classes, iou_threshold=0.3, score_threshold=0.2).tolist() == [0, 3, 5]


def test_nms_of_nothing_is_nothing() -> None:
    assert nms(np.zeros((0, 4)), [], [], iou_threshold=0.5).tolist() == []


# --- layouts -------------------------------------------------------------------------------


def test_yolov8_layout_decodes_anchors_as_columns() -> None:
    # (N=1, 4 + C=2, A=3): anchor 0 is class 1 at 0.8, anchor 2 class 0 at 0.6.
    out = np.zeros((1, 6, 3), dtype=np.float32)
    out[0, :, 0] = [50, 40, 20, 10, 0.1, 0.8]
    out[0, :, 1] = [10, 10, 4, 4, 0.05, 0.01]
    out[0, :, 2] = [100, 100, 50, 50, 0.6, 0.3]
    (d,) = decode(out, "yolov8")
    assert d.boxes[0].tolist() == [40, 35, 60, 45]
    assert np.allclose(d.scores, [0.8, 0.05, 0.6])
    assert d.classes.tolist() == [1, 0, 0]
    kept = d.suppressed(iou_threshold=0.5, score_threshold=0.25)
    assert kept.classes.tolist() == [1, 0]
    assert kept.boxes.tolist() == [[40, 35, 60, 45], [75, 75, 125, 125]]


def test_yolov5_layout_multiplies_objectness_and_class_probability() -> None:
    # (N=1, A=2, 5 + C=2)
    out = np.array([[[50, 40, 20, 10, 0.5, 0.2, 0.8], [10, 10, 4, 4, 1.0, 0.9, 0.1]]])
    (d,) = decode(out, "yolov5")
    assert np.allclose(d.scores, [0.4, 0.9])
    assert d.classes.tolist() == [1, 0]


def test_separate_outputs_in_a_normalized_format() -> None:
    (d,) = decode_separate(
        [[[0.25, 0.5, 0.75, 1.0]]],  # yxyx, normalized, TensorFlow style
        [[0.9]],
        [[3.0]],
        None,
        None,
        box_format="yxyx",
    )
    assert d.scaled(np.array([200.0, 100.0, 200.0, 100.0])).boxes.tolist() == [[100, 25, 200, 75]]
    assert d.classes.tolist() == [3]


def test_bad_outputs_are_refused_with_what_is_wrong() -> None:
    with pytest.raises(UnknownLayout, match="unknown detection layout 'ssd'"):
        decode(np.zeros((1, 6, 3)), "ssd")
    with pytest.raises(BadDetectorOutput, match=r"\[1, 6\].*expected 3 dimensions"):
        decode(np.zeros((1, 6)), "yolov8")
    with pytest.raises(BadDetectorOutput, match="expected more than 4 values per anchor, got 4"):
        decode(np.zeros((1, 4, 3)), "yolov8")
    with pytest.raises(BadDetectorOutput, match="scores must be"):
        decode_separate([[[0, 0, 1, 1]]], [[0.5, 0.6]], [[1, 1]], None, None, box_format="xyxy")
    with pytest.raises(BadDetectorOutput, match="classes are not whole numbers"):
        decode_separate([[[0, 0, 1, 1]]], [[0.5]], [[1.5]], None, None, box_format="xyxy")


def _yolov8_with(value: float, at: tuple[int, int]) -> np.ndarray[Any, Any]:
    out = np.zeros((1, 6, 3), dtype=np.float32)
    for anchor in range(3):
        out[0, :, anchor] = [50, 40, 20, 10, 0.9, 0.1]
    out[0][at] = value
    return out


# (case, layout, output, where the refusal points) -- a NaN score met no threshold, so its box
# vanished and the COCO metrics of what was left were recorded as the model's
NOT_FINITE = [
    ("a NaN class score (yolov8)", "yolov8", _yolov8_with(np.nan, (4, 1)), "[0, 4, 1]"),
    ("an infinite box side (yolov8)", "yolov8", _yolov8_with(np.inf, (2, 0)), "[0, 2, 0]"),
    (
        "a NaN objectness (yolov5)",
        "yolov5",
        np.array([[[50, 40, 20, 10, np.nan, 0.2, 0.8], [10, 10, 4, 4, 1.0, 0.9, 0.1]]]),
        "[0, 0, 4]",
    ),
]


@pytest.mark.parametrize(
    ("layout", "output", "where"), [c[1:] for c in NOT_FINITE], ids=[c[0] for c in NOT_FINITE]
)
def test_a_packed_output_that_is_not_finite_is_refused_not_thresholded_away(
    layout: str, output: np.ndarray[Any, Any], where: str
) -> None:
    with pytest.raises(BadDetectorOutput) as caught:
        decode(output, layout)
    assert f"at {where} (sample 0) is not a finite number" in str(caught.value)
    assert "every COCO metric, is undefined" in str(caught.value)


def test_separate_boxes_and_masks_are_finite_within_the_count() -> None:
    boxes = np.array([[[0, 0, 1, 1], [np.nan, 0, 1, 1]]])
    scores, classes = [[0.9, 0.8]], [[0, 0]]
    (d,) = decode_separate(boxes, scores, classes, [1], None, box_format="xyxy")  # past count 1
    assert d.boxes.tolist() == [[0, 0, 1, 1]]
    with pytest.raises(BadDetectorOutput, match=r"value nan at \[1, 0\]"):
        decode_separate(boxes, scores, classes, [2], None, box_format="xyxy")
    masks = np.zeros((1, 2, 2, 2), dtype=np.float32)
    masks[0, 0, 1, 1] = np.nan
    with pytest.raises(BadDetectorOutput, match=r"value nan at \[0, 1, 1\]"):
        decode_separate(boxes, scores, classes, [1], masks, box_format="xyxy")


# --- COCO metrics --------------------------------------------------------------------------


def ground_truth(*boxes: tuple[int, list[float]]) -> dict[str, Any]:
    """Two 100x100 images, categories 1 and 2; ``boxes``: (image id, xywh) of category 1."""
    return {
        "images": [{"id": 1, "width": 100, "height": 100}, {"id": 2, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [
            {"id": i, "image_id": image, "category_id": 1, "bbox": box}
            for i, (image, box) in enumerate(boxes, start=1)
        ],
    }


def det(box: list[float], score: float = 0.9, image: int = 1, category: int = 1) -> dict[str, Any]:
    return {"image_id": image, "category_id": category, "bbox": box, "score": score}


ONE = ground_truth((1, [10, 10, 10, 10]))


@pytest.mark.parametrize(
    ("gt", "detections", "expected"),
    [
        pytest.param(ONE, [det([10, 10, 10, 10])], (1.0, 1.0, 1.0), id="perfect"),
        # Shifted 2.5 px: IoU = 75 / 125 = 0.6. pycocotools matches when IoU >= threshold, and
        # its thresholds are linspace(.5, .95, 10), whose third is exactly 0.6: matched at .50,
        # .55 and .60, missed at the 7 others. AP is 1 where matched (one detection, first in
        # rank) and 0 elsewhere: mAP@[.5:.95] = 3/10; AP@.5 = 1; AR = 3/10 likewise.
        pytest.param(ONE, [det([12.5, 10, 10, 10])], (0.3, 1.0, 0.3), id="iou-0.6"),
        # Shifted 2 px: IoU = 80 / 120 = 0.667: matched at .50 to .65, 4 of 10.
        pytest.param(ONE, [det([12, 10, 10, 10])], (0.4, 1.0, 0.4), id="iou-0.667"),
        # A false positive ranked below the true one leaves precision 1 up to recall 1.
        pytest.param(
            ONE, [det([10, 10, 10, 10]), det([50, 50, 10, 10], 0.5)], (1.0, 1.0, 1.0), id="fp-after"
        ),
        # Ranked above it: precision is 1/2 when recall reaches 1, and the interpolated
        # precision (the best at any higher recall) is 1/2 at every recall point.
        pytest.param(
            ONE, [det([10, 10, 10, 10], 0.5), det([50, 50, 10, 10])], (0.5, 0.5, 1.0), id="fp-first"
        ),
        # Two objects, one found: precision 1 up to recall 1/2, then nothing. COCO samples
        # precision at 101 recall points 0, .01, ..., 1: 51 of them are <= .5, so AP = 51/101.
        pytest.param(
            ground_truth((1, [10, 10, 10, 10]), (2, [10, 10, 10, 10])),
            [det([10, 10, 10, 10])],
            (51 / 101, 51 / 101, 0.5),
            id="half-found",
        ),
        # A detection of a category with no ground truth: pycocotools averages only over
        # categories that have some, so it changes nothing.
        pytest.param(
            ONE, [det([10, 10, 10, 10]), det([50, 50, 10, 10], category=2)], (1, 1, 1), id="other"
        ),
        pytest.param(ONE, [], (0.0, 0.0, 0.0), id="no-detections"),
    ],
)
def test_coco_metrics_on_hand_worked_cases(
    gt: dict[str, Any], detections: list[dict[str, Any]], expected: tuple[float, float, float]
) -> None:
    metrics = coco_metrics(gt, detections)
    assert (metrics["map"], metrics["map50"], metrics["recall"]) == pytest.approx(expected)


def test_coco_metrics_leave_their_inputs_alone_and_print_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gt = ground_truth((1, [10, 10, 10, 10]))
    detections = [det([10, 10, 10, 10])]
    before = (repr(gt), repr(detections))
    coco_metrics(gt, detections)
    assert (repr(gt), repr(detections)) == before  # loadRes adds ids and areas to its input
    assert capsys.readouterr().out == ""


def _with(gt: dict[str, Any], key: str, index: int, **changes: Any) -> dict[str, Any]:
    items = [dict(item) for item in gt[key]]
    items[index].update(changes)
    return {**gt, key: items}


@pytest.mark.parametrize(
    ("gt", "message"),
    [
        (
            _with(ONE, "annotations", 0, bbox=[95, 10, 10, 10]),
            r"not inside the image \(100 x 100\)",
        ),
        (_with(ONE, "annotations", 0, bbox=[10, 10, 0, 10]), "has no area"),
        (_with(ONE, "annotations", 0, bbox=[10, 10, 10]), r"bbox must be 4 numbers"),
        (_with(ONE, "annotations", 0, category_id=7), "annotation 1: unknown category_id 7"),
        (_with(ONE, "annotations", 0, image_id=9), "unknown image_id 9"),
        # pycocotools records a match by the matched annotation's id, 0 meaning none.
        (_with(ONE, "annotations", 0, id=0), "ids must be >= 1"),
        (_with(ONE, "images", 1, id=1), "images: id 1 appears twice"),
        (_with(ONE, "images", 0, width=0), "width and height must be positive integers"),
        ({**ONE, "annotations": []}, "nothing to measure against"),
        ({**ONE, "categories": None}, "categories: missing, or not a list"),
    ],
)
def test_bad_ground_truth_is_refused_with_the_reason(gt: dict[str, Any], message: str) -> None:
    with pytest.raises(BadGroundTruth, match=message):
        coco_metrics(gt, [det([10, 10, 10, 10])])


def test_ground_truth_gets_the_fields_pycocotools_needs() -> None:
    (ann,) = validate_ground_truth(ONE)["annotations"]
    assert (ann["area"], ann["iscrowd"]) == (100, 0)


@pytest.mark.parametrize(
    ("detection", "message"),
    [
        (det([10, 10, 10, 10], image=5), "detection 0: unknown image_id 5"),
        (det([10, 10, 10, 10], category=3), "unknown category_id 3"),
        (det([10, 10, -1, 10]), "negative size"),
        ({**det([10, 10, 10, 10]), "score": "high"}, "score must be a number"),
    ],
)
def test_bad_detections_are_refused(detection: dict[str, Any], message: str) -> None:
    with pytest.raises(BadDetections, match=message):
        coco_metrics(ONE, [detection])


def test_detections_map_back_to_coco_results_on_the_original_image() -> None:
    t = transform_of(640, 480, [Letterbox((320, 320))])
    d = Detections(
        np.array([[50.0, 140.0, 150.0, 240.0]]), np.array([0.75]), np.array([1], dtype=np.int64)
    )
    assert to_coco(7, d, t, category_ids=[1, 3]) == [
        {"image_id": 7, "category_id": 3, "bbox": [100.0, 200.0, 200.0, 200.0], "score": 0.75}
    ]
    with pytest.raises(BadDetections, match="class index 1 has no category"):
        to_coco(7, d, t, category_ids=[1])


# --- the shape of what is scored, on the first answer ----------------------------------------


def _packed_plan(layout: str, classes: int) -> Plan:
    detection = Detection(layout=layout)  # type: ignore[arg-type]
    output = Output(name="out", type="detection", detection=detection)
    truth = GroundTruth(validate_ground_truth(ONE), [1], [(100, 100)], {"a": 1, "b": 2})
    names = [f"c{i}" for i in range(classes)]
    return Plan(output, detection, Input(name="x"), truth, CategoryMap(names, [None] * classes))


# (layout, output shape, the reason's words); the labels file names 3 classes
PACKED = [
    ("yolov8", (1, 7, 20), None),  # 4 + 3 columns per anchor
    ("yolov5", (1, 20, 8), None),  # 5 + 3
    ("yolov8", (7, 20), "reads (N, 4 + classes, anchors), the output has shape [7, 20]"),
    (
        "yolov5",
        (1, 1, 20, 8),
        "reads (N, anchors, 5 + classes), the output has shape [1, 1, 20, 8]",
    ),
    ("yolov8", (1, 8, 20), "scores 4 classes but its labels file names 3"),
]


@pytest.mark.parametrize(("layout", "shape", "message"), PACKED)
def test_a_packed_output_of_another_rank_or_class_count_is_refused(
    layout: str, shape: tuple[int, ...], message: str | None
) -> None:
    answer = {"out": np.zeros(shape, dtype=np.float32)}
    if message is None:
        check_columns(answer, _packed_plan(layout, 3))
        return
    with pytest.raises(DetectionSetupError) as caught:
        check_columns(answer, _packed_plan(layout, 3))
    assert "output 'out'" in str(caught.value) and message in str(caught.value)
