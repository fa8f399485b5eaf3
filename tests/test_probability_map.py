"""Detection from a probability map (DBNet's post-processing, ``layout: probability-map``).

The regions, their boxes, scores and unclipping equal a direct computation with SciPy's
``ndimage.label`` (8-connected) and NumPy; a map that is not ``(N, 1, H, W)`` probabilities and
settings out of bounds are refused. End to end, PP-OCR v4's text detector as rapidocr-onnxruntime
1.4.4 publishes it (``ch_PP-OCRv4_det_infer.onnx``, unmodified) runs through the CLI on images
of three sizes with text rendered here at known boxes, each resized by ``resize_multiple`` to
its own multiple-of-32 size; its COCO metrics equal those of the same model run with ONNX
Runtime directly on PaddleOCR's det preprocessing (written out here), the map post-processed by
the direct computation and the boxes scaled back by hand.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import yaml
from PIL import Image

from pinbench.catalog import frameworks, ppocr_det
from pinbench.catalog.ppocr_det import MEAN, SIZES, STD, rendered
from pinbench.catalog.ppocr_det import MEMBER as DETECTOR
from pinbench.errors import UserError
from pinbench.registry.manifest import parse_manifest
from pinbench.tasks.detection.coco import coco_metrics
from pinbench.tasks.detection.errors import BadDetectorOutput
from pinbench.tasks.detection.regions import Settings, regions
from tests.helpers import Cli
from tests.package_models import package_file

Map = npt.NDArray[np.float64]


def direct(prob: Map, s: Settings) -> tuple[list[list[float]], list[float]]:
    """DBNet's steps on one ``(H, W)`` map, written out with SciPy: boxes ``xyxy``, scores."""
    from scipy import ndimage

    labels, _ = ndimage.label(prob > s.threshold, structure=np.ones((3, 3)))
    boxes, scores = [], []
    for i, (ys, xs) in enumerate(ndimage.find_objects(labels)[: s.max_candidates]):
        w, h = xs.stop - xs.start, ys.stop - ys.start
        score = float(prob[labels == i + 1].mean(dtype=np.float64))
        if min(w, h) < s.min_size or score < s.box_threshold:
            continue
        d = w * h * s.unclip_ratio / (2 * (w + h))  # area x ratio / perimeter
        boxes.append([xs.start - d, ys.start - d, xs.stop + d, ys.stop + d])
        scores.append(score)
    order = np.argsort(-np.array(scores), kind="stable")
    return [boxes[i] for i in order], [scores[i] for i in order]


def test_a_rectangle_grows_by_area_times_ratio_over_perimeter() -> None:
    prob = np.zeros((1, 1, 12, 20))
    prob[0, 0, 2:6, 3:13] = 0.9  # 10 x 4: grows by 40 * 1.6 / 28 on every side
    (found,) = regions(prob, Settings())
    d = 40 * 1.6 / 28
    assert found.boxes[0].tolist() == pytest.approx([3 - d, 2 - d, 13 + d, 6 + d])
    assert found.scores.tolist() == pytest.approx([0.9]) and found.classes.tolist() == [0]


CASES = [
    # (why, settings): each on the same random maps of blobs
    ("PaddleOCR's defaults", Settings()),
    ("a low binarization threshold merges blobs", Settings(threshold=0.1)),
    ("a high box threshold drops faint regions", Settings(box_threshold=0.8)),
    ("min_size drops thin regions", Settings(min_size=6)),
    ("max_candidates reads the first regions only", Settings(max_candidates=2)),
    ("no growth", Settings(unclip_ratio=0.0, min_size=0)),
]


@pytest.mark.parametrize("settings", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_regions_equal_the_direct_computation(settings: Settings) -> None:
    rng = np.random.default_rng(7)
    maps = np.zeros((3, 1, 40, 60))
    for m in maps:
        for _ in range(8):  # rectangles of random size and strength, some touching diagonally
            y, x, h, w = rng.integers(0, 36), rng.integers(0, 56), *rng.integers(1, 12, 2)
            m[0, y : y + h, x : x + w] = rng.uniform(0.2, 1.0, (h, w))[: 40 - y, : 60 - x]
    for found, m in zip(regions(maps, settings), maps, strict=True):
        boxes, scores = direct(m[0], settings)
        assert found.boxes.reshape(-1).tolist() == pytest.approx(np.ravel(boxes).tolist())
        assert found.scores.tolist() == pytest.approx(scores, rel=1e-12)


def test_diagonal_neighbours_are_one_region() -> None:
    prob = np.zeros((1, 1, 8, 8))
    prob[0, 0, [1, 2, 3], [1, 2, 3]] = 1.0  # 8-connected, as the contours DBNet traces
    (found,) = regions(prob, Settings(min_size=0, unclip_ratio=0.0))
    assert found.boxes.tolist() == [[1.0, 1.0, 4.0, 4.0]]


BAD_MAPS = [
    ("three axes", np.zeros((1, 8, 8)), "expected (N, 1, H, W)"),
    ("two channels", np.zeros((1, 2, 8, 8)), "expected (N, 1, H, W)"),
    ("logits, not probabilities", np.full((1, 1, 4, 4), 3.5), "is not a probability in [0, 1]"),
    ("a NaN", np.full((1, 1, 4, 4), np.nan), "value nan at [0, 0, 0, 0]"),
]


@pytest.mark.parametrize(
    ("output", "message"), [c[1:] for c in BAD_MAPS], ids=[c[0] for c in BAD_MAPS]
)
def test_a_map_that_is_not_probabilities_of_one_class_is_refused(output: Map, message: str) -> None:
    with pytest.raises(BadDetectorOutput, match=re.escape(message)):
        regions(output, Settings())


def map_plan(labels: list[str]) -> Any:
    from pinbench.registry.ports import Detection, Input, Output
    from pinbench.tasks.detection.score import CategoryMap, Plan

    detection = Detection(layout="probability-map")
    output = Output(name="maps", type="detection", detection=detection)
    truth: Any = None  # not read by the check
    return Plan(output, detection, Input(name="x"), truth, CategoryMap(labels, [1] * len(labels)))


@pytest.mark.parametrize(
    ("labels", "output", "message"),
    [
        (["text"], np.zeros((1, 8, 8)), "expected (N, 1, H, W)"),
        (["text", "title"], np.zeros((1, 1, 8, 8)), "scores one class but its labels file names 2"),
    ],
)
def test_the_first_answer_is_checked_before_timing(
    labels: list[str], output: Map, message: str
) -> None:
    from pinbench.tasks.detection.decoding import check_columns

    with pytest.raises(UserError, match=re.escape(message)):
        check_columns({"maps": output}, map_plan(labels))


BAD_SECTIONS = [
    ({"probability_map": {"threshold": 1.5}}, "threshold must be between 0 and 1, got 1.5"),
    ({"probability_map": {"unclip_ratio": 11}}, "unclip_ratio must be between 0 and 10"),
    ({"probability_map": {"max_candidates": 0}}, "max_candidates must be between 1 and 100000"),
    ({"probability_map": {"min_size": -1}}, "min_size must be between 0 and 16384"),
    ({"score_threshold": 0.5}, "`score_threshold` does not apply to it"),
    ({"normalized": True}, "`normalized` does not apply to it"),
    ({"layout": "yolov8", "probability_map": {}}, "describes layout probability-map, not yolov8"),
]


@pytest.mark.parametrize(("change", "message"), BAD_SECTIONS)
def test_a_probability_map_section_out_of_bounds_is_refused(
    change: dict[str, Any], message: str
) -> None:
    output = {
        "name": "maps",
        "type": "detection",
        "labels": {"path": "labels.txt"},
        "detection": {"layout": "probability-map", **change},
    }
    manifest = {
        "kind": "model",
        "name": "test/dbnet",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": [{"path": "m.onnx", "sha256": "0" * 64, "size": 1}],
        "outputs": [output],
    }
    with pytest.raises(UserError, match=re.escape(message)):
        parse_manifest(manifest)


# --- end to end: PP-OCR v4's detector ---------------------------------------------------------


def paddle_size(width: int, height: int, limit: int = 960) -> tuple[int, int]:
    """PaddleOCR's ``DetResizeForTest.resize_image_type0`` at its defaults (limit_type max,
    960), written out: (200, 100) -> (192, 96); (330, 120) -> (320, 128), x and y scaled
    apart; (250, 80) -> (256, 64), 80 / 32 = 2.5 rounding half to even."""
    ratio = float(limit) / max(height, width) if max(height, width) > limit else 1.0
    h, w = int(height * ratio), int(width * ratio)
    return max(int(round(w / 32) * 32), 32), max(int(round(h / 32) * 32), 32)


def paddle_det_input(png: bytes) -> npt.NDArray[np.float32]:
    """PaddleOCR's det preprocessing of one image: BGR, resized to ``paddle_size`` (bilinear,
    as pinbench's resize does it: per channel in float, rounded back to 8 bits), ImageNet mean
    and std, NCHW."""
    bgr = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))[..., ::-1]
    width, height = paddle_size(bgr.shape[1], bgr.shape[0])
    channels = [
        np.asarray(
            Image.fromarray(bgr[..., c].astype(np.float32), mode="F").resize(
                (width, height), Image.Resampling.BILINEAR
            )
        )
        for c in range(3)
    ]
    x = np.clip(np.rint(np.stack(channels, axis=-1)), 0, 255).astype(np.uint8).astype(np.float32)
    x = (x - np.array(MEAN, dtype=np.float32)) / np.array(STD, dtype=np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def direct_results(model: Path, images: list[bytes]) -> list[dict[str, Any]]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    out = []
    for image_id, (png, (width, height)) in enumerate(zip(images, SIZES, strict=True), start=1):
        (prob,) = session.run(None, {"x": paddle_det_input(png)})
        input_width, input_height = paddle_size(width, height)
        assert prob.shape == (1, 1, input_height, input_width)  # the map is the input's size
        sx, sy = width / input_width, height / input_height
        boxes, scores = direct(prob[0, 0].astype(np.float64), Settings())
        for (x0, y0, x1, y1), score in zip(boxes, scores, strict=True):
            x0, x1 = np.clip([x0 * sx, x1 * sx], 0, width)
            y0, y1 = np.clip([y0 * sy, y1 * sy], 0, height)
            bbox = [float(x0), float(y0), float(x1 - x0), float(y1 - y0)]
            out.append({"image_id": image_id, "category_id": 1, "bbox": bbox, "score": score})
    return out


def test_pp_ocr_detector_scores_as_the_direct_computation(cli: Cli, tmp_path: Path) -> None:
    """The catalog's part (``pinbench.catalog.ppocr_det``): the wheel's file, the rendered
    images and their boxes, published and run through the CLI."""
    model = package_file("rapidocr-onnxruntime", DETECTOR)
    images, coco = rendered()
    assert cli("init").code == 0
    for path in (
        frameworks.write(tmp_path, "onnxruntime"),
        ppocr_det.write_dataset(tmp_path),
        ppocr_det.export(tmp_path),
    ):
        done = cli("publish", str(path))
        assert done.code == 0, done.err
    request = tmp_path / "request.yaml"
    request.write_text(
        yaml.safe_dump(
            {
                "model": f"{ppocr_det.NAME}@1",
                "dataset": f"{ppocr_det.DATASET}@1",
                "scenario": {"mode": "accuracy"},
            }
        )
    )
    assert cli("lock", str(request), "-o", str(tmp_path / "run.lock")).code == 0
    ran = cli("run", str(tmp_path / "run.lock"), "--runner", "local")
    assert ran.code == 0, ran.err
    run_id = json.loads(cli("runs", "list", "--json").out)[0]["id"]
    run = json.loads(cli("runs", "show", run_id, "--json").out)
    assert run["status"] == "succeeded", run["error"]

    found = direct_results(model, images)
    expected = coco_metrics(coco, found)
    assert {k: run[k] for k in expected} == pytest.approx(expected, abs=1e-12)
    assert run["detections_count"] == len(found) == len(coco["annotations"])
    assert run["map50"] == 1.0  # every line found, each box within IoU 0.5 of its truth
    assert 0.5 < run["map"] < 0.7  # DBNet's unclipped boxes are looser than the line boxes

    # Maps of three sizes are recorded as one array: each at the top-left, NaN past its size.
    maps = tmp_path / "maps.npy"
    assert cli("runs", "outputs", run_id, "-o", str(maps)).code == 0
    recorded = np.load(maps)
    assert recorded.shape == (3, 1, 128, 320)
    for m, size in zip(recorded[:, 0], SIZES, strict=True):
        width, height = paddle_size(*size)
        assert np.isnan(m).sum() == m.size - width * height
        assert not np.isnan(m[:height, :width]).any()

    # Samples of sizes of their own form no batch of two: refused before anything is timed.
    request.write_text(request.read_text() + "batch_size: 2\n")
    assert cli("lock", str(request), "-o", str(tmp_path / "batched.lock")).code == 0
    batched = cli("run", str(tmp_path / "batched.lock"), "--runner", "local")
    assert batched.code == 1, batched.err
    assert "cannot form a batch of 2: run with batch_size 1" in batched.err
