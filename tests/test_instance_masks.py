"""Detectors whose boxes, scores, classes, count and masks are separate outputs (TensorFlow's
Object Detection API, MLModelScope's ``boundingbox`` and ``instancesegment``), and instance
segmentation scored with COCO's segm metrics.

End to end, a model built here gives TensorFlow-style outputs: normalized ``yxyx`` boxes for two
objects drawn on each image, their scores and classes, a count of 2 out of 3 boxes (the third,
a high-scoring box on nothing, must not be read), and 15x15 box-relative masks. Its input is
letterboxed (or longest-side resized) so boxes and masks must be mapped back through that
geometry to score 1.0. A model whose masks cover only half of each box keeps box mAP 1.0 and
loses mask mAP: the masks are scored for themselves.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from pinbench.catalog import frameworks
from pinbench.errors import UserError
from pinbench.registry.steps import MaxDimension as MaxDimensionStep
from pinbench.tasks.detection.boxes import Letterbox, MaxDimension, transform_of
from pinbench.tasks.detection.coco import coco_mask_metrics, validate_segmentations
from pinbench.tasks.detection.errors import BadDetectorOutput, BadGroundTruth
from pinbench.tasks.detection.layouts import decode_separate
from pinbench.tasks.detection.masks import box_mask, encode, image_mask
from pinbench.worker.image_steps import max_dimension
from tests.helpers import Cli, dump, onnx_image_model, write_files

WIDTH, HEIGHT = 96, 64
OBJECTS = [  # class index, (x0, y0, x1, y1) on the original image
    (0, (24, 16, 72, 48)),
    (1, (4, 52, 92, 60)),
]
LABELS = ["square", "bar"]


def rect_mask(box: tuple[int, int, int, int]) -> np.ndarray[Any, np.dtype[np.uint8]]:
    out = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
    x0, y0, x1, y1 = box
    out[y0:y1, x0:x1] = 1
    return out


def ground_truth() -> dict[str, Any]:
    """Two images with the same two objects; segmentations as RLE (exact) or polygons."""
    annotations: list[dict[str, Any]] = []
    for image_id in (1, 2):
        for cls, box in OBJECTS:
            x0, y0, x1, y1 = box
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": cls + 1,
                    "bbox": [x0, y0, x1 - x0, y1 - y0],
                    "segmentation": encode(rect_mask(box)),
                }
            )
    return {
        "images": [
            {"id": i, "file_name": f"{i}.png", "width": WIDTH, "height": HEIGHT} for i in (1, 2)
        ],
        "categories": [{"id": i + 1, "name": n} for i, n in enumerate(LABELS)],
        "annotations": annotations,
    }


def image_png(colour: tuple[int, int, int]) -> bytes:
    pixels = np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
    for _, (x0, y0, x1, y1) in OBJECTS:
        pixels[y0:y1, x0:x1] = colour
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


# --- the pieces -----------------------------------------------------------------------------


def test_separate_outputs_read_the_first_count_boxes_in_their_format() -> None:
    boxes = np.array([[[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.6, 0.7], [0, 0, 1, 1]]])
    found = decode_separate(
        boxes, [[0.9, 0.8, 0.99]], [[1.0, 0.0, 1.0]], [2.0], None, box_format="yxyx"
    )
    assert len(found) == 1 and len(found[0]) == 2
    assert found[0].boxes.tolist() == [[0.2, 0.1, 0.4, 0.3], [0.5, 0.5, 0.7, 0.6]]
    assert found[0].classes.tolist() == [1, 0] and found[0].masks is None
    # no classes output: a one-class detector
    only = decode_separate(boxes, [[0.9, 0.8, 0.7]], None, None, None, box_format="xyxy")
    assert only[0].classes.tolist() == [0, 0, 0]


def test_a_negative_class_is_padding_not_a_detection() -> None:
    """GluonCV pads its fixed number of detections with class -1 and score -1."""
    from pinbench.registry.ports import Detection, Input, Output
    from pinbench.tasks.detection.decoding import decoded
    from pinbench.tasks.detection.score import CategoryMap, Plan

    detection = Detection(layout="separate", box_format="xyxy", scores="s", classes="c")
    plan = Plan(
        Output(name="b", type="detection", detection=detection),
        detection,
        Input(name="x"),
        None,  # type: ignore[arg-type]  # the ground truth is not read here
        CategoryMap(["a", "b"], [1, 2]),
    )
    outputs = {
        "b": np.zeros((1, 3, 4)),
        "s": np.array([[0.9, -1.0, -1.0]]),
        "c": np.array([[1.0, -1.0, -1.0]]),
    }
    (sample,) = decoded(outputs, plan)
    assert sample.classes.tolist() == [1]
    outputs["c"] = np.array([[2.0, -1.0, -1.0]])
    with pytest.raises(UserError, match="class index 2 but the labels file names 2 classes"):
        decoded(outputs, plan)


@pytest.mark.parametrize(
    ("scores", "classes", "count", "masks", "message"),
    [
        ([[0.9, 0.8]], None, None, None, "scores must be [1, 3] like the boxes"),
        ([[0.9, 0.8, 0.7]], [[0.5, 0, 0]], None, None, "classes are not whole numbers"),
        ([[0.9, 0.8, 0.7]], None, [4], None, "count must be one whole number 0..3"),
        ([[0.9, np.nan, 0.7]], None, None, None, "scores are not all finite"),
        ([[0.9, 0.8, 0.7]], None, None, np.zeros((1, 2, 4, 4)), "masks must be (1, 3, h, w)"),
    ],
)
def test_separate_outputs_of_the_wrong_shape_are_refused(
    scores: Any, classes: Any, count: Any, masks: Any, message: str
) -> None:
    with pytest.raises(BadDetectorOutput, match=re_escape(message)):
        decode_separate(np.zeros((1, 3, 4)), scores, classes, count, masks, box_format="xyxy")


def test_a_box_mask_is_stretched_over_its_box_and_clipped_to_the_image() -> None:
    t = transform_of(WIDTH, HEIGHT, [])
    grid = np.zeros((4, 4), dtype=np.float32)
    grid[:, :2] = 1.0  # the left half of the box
    mask = box_mask(grid, np.array([24.0, 16.0, 72.0, 48.0]), t, 0.5)
    assert mask[16:48, 24:48].all() and not mask[16:48, 49:72].any()
    assert mask.sum() == 24 * 32
    # a box running off the image is pasted clipped, its scale kept
    off = box_mask(np.ones((2, 2), dtype=np.float32), np.array([80.0, -8.0, 112.0, 8.0]), t, 0.5)
    assert off.sum() == 16 * 8 and off[0:8, 80:96].all()


def test_an_image_mask_maps_back_through_the_letterbox() -> None:
    t = transform_of(WIDTH, HEIGHT, [Letterbox((64, 64))])  # 96x64 -> 64x43, 10 rows above
    grid = np.zeros((64, 64), dtype=np.float32)
    grid[:10] = 1.0  # padding: no original pixel lands there
    grid[10 + 11 : 10 + 32, 16:48] = 1.0  # the square (x 24..72, y 16..48) at 2/3 scale
    mask = image_mask(grid, t, 0.5)
    assert mask.shape == (HEIGHT, WIDTH)
    expected = rect_mask((24, 16, 72, 48))
    assert (mask != expected).sum() <= 2 * (48 + 32)  # a one-pixel rim from rounding


def test_max_dimension_resizes_the_longer_side_as_its_geometry_says() -> None:
    x = np.zeros((1, HEIGHT, WIDTH, 3), dtype=np.uint8)
    out = max_dimension(x, MaxDimensionStep(size=64))
    t = transform_of(WIDTH, HEIGHT, [MaxDimension(64)])
    assert out.shape[1:3] == (t.input_height, t.input_width) == (43, 64)
    tall = max_dimension(np.zeros((2, 300, 100, 1), dtype=np.float32), MaxDimensionStep(size=30))
    assert tall.shape == (2, 30, 10, 1)


def test_perfect_masks_score_one_and_half_masks_do_not() -> None:
    gt = ground_truth()
    perfect = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "segmentation": a["segmentation"],
            "score": 0.9,
        }
        for a in gt["annotations"]
    ]
    # The square (48 x 32 = 1,536 pixels) is medium, the bar (88 x 8 = 704) small: every
    # statistic is 1 but those of large objects, which the ground truth has none of.
    defined = ("map", "map50", "map75", "map_small", "map_medium", "ar1", "ar10", "recall")
    assert coco_mask_metrics(gt, perfect) == {
        f"mask_{name}": 1.0 for name in (*defined, "ar_small", "ar_medium")
    }
    half = []
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        mask = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
        mask[y : y + h, x : x + w // 2] = 1
        half.append({**perfect[0], "image_id": a["image_id"], "category_id": a["category_id"]})
        half[-1]["segmentation"] = encode(mask)
    scored = coco_mask_metrics(gt, half)
    assert scored["mask_map50"] == 1.0 and scored["mask_map"] < 0.2  # IoU 0.5 exactly


@pytest.mark.parametrize(
    ("segmentation", "message"),
    [
        (None, "need a segmentation on every annotation"),
        ([[1, 2, 3, 4]], "need a segmentation on every annotation"),  # two points
        ([[0, 0, 200, 0, 200, 10]], "need a segmentation on every annotation"),  # outside
        ({"size": [10, 10], "counts": "abc"}, "needs size [64, 96]"),
        ({"size": [64, 96], "counts": [1, -2]}, "counts must be whole numbers"),
    ],
)
def test_instance_ground_truth_needs_readable_segmentations(
    segmentation: Any, message: str
) -> None:
    gt = ground_truth()
    gt["annotations"][1]["segmentation"] = segmentation
    with pytest.raises(BadGroundTruth, match=re_escape(message)) as caught:
        validate_segmentations(gt)
    assert caught.value.where == "annotation 2"


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_a_polygon_ground_truth_is_scored_like_its_rle() -> None:
    gt = ground_truth()
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        a["segmentation"] = [[x, y, x + w, y, x + w, y + h, x, y + h]]
    validate_segmentations(gt)
    found = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "segmentation": encode(rect_mask(OBJECTS[a["category_id"] - 1][1])),
            "score": 0.9,
        }
        for a in gt["annotations"]
    ]
    assert coco_mask_metrics(gt, found)["mask_map50"] == 1.0


# --- end to end ---------------------------------------------------------------------------


def tf_style_model(boxes: np.ndarray[Any, Any], masks: np.ndarray[Any, Any]) -> bytes:
    """An ONNX model giving fixed TensorFlow-style outputs for one image (its input only
    feeds a zero added to the count, so it is read): boxes (1, 3, 4), scores, classes,
    num_detections, masks (1, 3, 15, 15)."""
    consts = {
        "detection_boxes": boxes.astype(np.float32)[None],
        "detection_scores": np.array([[0.9, 0.8, 0.99]], dtype=np.float32),
        "detection_classes": np.array([[0.0, 1.0, 0.0]], dtype=np.float32),
        "detection_masks": masks.astype(np.float32)[None],
        "base_count": np.array([2.0], dtype=np.float32),
    }
    nodes = [
        helper.make_node("Constant", [], [f"{name}_c"], value=numpy_helper.from_array(v))
        for name, v in consts.items()
    ]
    nodes += [
        helper.make_node("Identity", [f"{n}_c"], [n]) for n in consts if n.startswith("detection_")
    ]
    nodes += [
        helper.make_node("ReduceMin", ["image"], ["low"], keepdims=0),
        helper.make_node("Mul", ["low", "zero"], ["nothing"]),
        helper.make_node("Add", ["base_count_c", "nothing"], ["num_detections"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tf-od-api-like",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, None, None, 3])],
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, list(consts[n].shape))
            for n in consts
            if n.startswith("detection_")
        ]
        + [helper.make_tensor_value_info("num_detections", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def normalized_yxyx(step: Letterbox | MaxDimension) -> np.ndarray[Any, Any]:
    """The two objects' boxes as the model would see them: hand-computed for each geometry."""
    if isinstance(step, Letterbox):  # 96x64 -> scale 2/3 -> 64x43 (43/64 rows), top pad 10
        sx, sy, oy, w, h = 64 / 96, 43 / 64, 10.0, 64.0, 64.0
    else:  # 96x64 -> 64x43, no pad
        sx, sy, oy, w, h = 64 / 96, 43 / 64, 0.0, 64.0, 43.0
    rows = [
        [(y0 * sy + oy) / h, x0 * sx / w, (y1 * sy + oy) / h, x1 * sx / w]
        for _, (x0, y0, x1, y1) in OBJECTS
    ]
    return np.array([*rows, [0.0, 0.0, 0.2, 0.2]])  # the third box is beyond the count


def model_yaml(
    root: Path, name: str, step: Letterbox | MaxDimension, masks: np.ndarray[Any, Any]
) -> Path:
    files = write_files(
        root / name,
        {
            "model.onnx": tf_style_model(normalized_yxyx(step), masks),
            "labels.txt": "\n".join(LABELS).encode() + b"\n",
        },
    )
    resize = (
        {"letterbox": {"size": [64, 64], "value": 0}}
        if isinstance(step, Letterbox)
        else {"max_dimension": {"size": 64}}
    )
    tensor = {"type": "tensor"}
    data = onnx_image_model(
        name,
        files,
        [{"decode": {"color_mode": "rgb"}}, resize, {"normalize": {"scale": 1.0}}],
        [
            {
                "name": "detection_boxes",
                "type": "detection",
                "labels": {"path": "labels.txt"},
                "detection": {
                    "layout": "separate",
                    "box_format": "yxyx",
                    "normalized": True,
                    "scores": "detection_scores",
                    "classes": "detection_classes",
                    "count": "num_detections",
                    "masks": "detection_masks",
                    "mask_kind": "box",
                },
            },
            {"name": "detection_scores", **tensor},
            {"name": "detection_classes", **tensor},
            {"name": "num_detections", **tensor},
            {"name": "detection_masks", **tensor},
        ],
    )
    return dump(root / f"model-{name}.yaml", data)


def dataset_yaml(root: Path) -> Path:
    files = write_files(
        root / "shapes",
        {
            "images/1.png": image_png((255, 0, 0)),
            "images/2.png": image_png((0, 0, 255)),
            "instances.json": json.dumps(ground_truth()).encode(),
        },
    )
    data = {
        "kind": "dataset",
        "name": "test/shapes",
        "version": "1.0.0",
        "task": "detection",
        "files": [{**f, "source": f"file:shapes/{f['path']}"} for f in files],
        "data": {"format": "images", "path": "images"},
        "labels": {"format": "coco-json", "path": "instances.json"},
    }
    return dump(root / "dataset-shapes.yaml", data)


def run(cli: Cli, tmp_path: Path, model: str) -> dict[str, Any]:
    request = tmp_path / f"{model.replace('/', '-')}.yaml"
    request.write_text(
        yaml.safe_dump(
            {"model": f"{model}@1", "dataset": "test/shapes@1", "scenario": {"mode": "accuracy"}}
        )
    )
    lock = request.with_suffix(".lock")
    assert cli("lock", str(request), "-o", str(lock)).code == 0
    ran = cli("run", str(lock), "--runner", "local")
    assert ran.code == 0, ran.err
    listed = json.loads(cli("runs", "list", "--json").out)
    shown: dict[str, Any] = json.loads(cli("runs", "show", listed[0]["id"], "--json").out)
    return shown


def test_separate_outputs_and_box_masks_score_through_the_geometry(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "catalog"
    root.mkdir()
    full = np.ones((3, 15, 15))
    half = np.zeros((3, 15, 15))
    half[:, :, :8] = 1.0  # a little over half of each box
    manifests = [
        frameworks.write(root, "onnxruntime"),
        dataset_yaml(root),
        model_yaml(root, "letterboxed", Letterbox((64, 64)), full),
        model_yaml(root, "longest-side", MaxDimension(64), half),
    ]
    assert cli("init").code == 0
    for path in manifests:
        done = cli("publish", str(path))
        assert done.code == 0, done.err

    perfect = run(cli, tmp_path, "test/letterboxed")
    assert perfect["status"] == "succeeded", perfect["error"]
    for metric in ("map", "map50", "recall", "mask_map", "mask_map50", "mask_recall"):
        assert perfect[metric] == pytest.approx(1.0), metric
    assert perfect["detections_count"] == 4  # two per image: the third box is past the count
    square = perfect["details"]["detections"][0][0]
    assert square[0] == 1 and square[2:] == pytest.approx([24, 16, 48, 32], abs=0.01)

    halved = run(cli, tmp_path, "test/longest-side")
    assert halved["map"] == pytest.approx(1.0)  # the boxes are right
    assert halved["mask_map50"] == pytest.approx(1.0)  # the masks overlap by about half
    assert halved["mask_map"] < 0.2
