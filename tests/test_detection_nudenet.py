"""A real detector on real ground truth: NudeNet 3.4.2's YOLOv8n ONNX file, run in plain
onnxruntime through NudeNet's pipeline (pad to a square at the top-left, resize to 320x320),
decoded and suppressed by ``pinbench.tasks.detection`` and scored with pycocotools against
faces annotated by hand in photos scikit-image ships (``tests/data/detection/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.catalog import nudenet
from pinbench.tasks.detection.boxes import (
    PadToSquare,
    Resize,
    Step,
    Transform,
    transform_of,
)
from pinbench.tasks.detection.coco import coco_metrics, to_coco
from pinbench.tasks.detection.layouts import Detections, decode
from pinbench.tasks.detection.nms import iou

GROUND_TRUTH = Path(__file__).parent / "data" / "detection" / "skimage-faces.json"


def model_output(photo: nudenet.FacePhoto) -> Any:
    """NudeNet's ONNX output for one photo through its own pipeline (pad to a square at the
    top-left, resize), ``(1, 4 + 18, 2100)``."""
    import onnxruntime as ort
    from PIL import Image

    with Image.open(nudenet.photo_source(photo)) as image:
        rgb = image.convert("RGB")
    side = max(rgb.size)
    square = Image.new("RGB", (side, side))
    square.paste(rgb, (0, 0))
    x = square.resize((nudenet.SIZE, nudenet.SIZE), Image.Resampling.BILINEAR)
    batch = (np.asarray(x, dtype=np.float32) / 255).transpose(2, 0, 1)[None]
    session = ort.InferenceSession(str(nudenet.onnx_source()), providers=["CPUExecutionProvider"])
    (output,) = session.run([nudenet.OUTPUT], {nudenet.INPUT: batch})
    assert output.shape == (1, 4 + len(nudenet.LABELS), 2100)
    return output


def detect(photo: nudenet.FacePhoto) -> tuple[Detections, Transform]:
    """NudeNet's pipeline on one photo, in model-input coordinates, after NMS."""
    (found,) = decode(model_output(photo), nudenet.LAYOUT)
    kept = found.suppressed(
        iou_threshold=nudenet.IOU_THRESHOLD,
        score_threshold=nudenet.SCORE_THRESHOLD,
        max_detections=100,
    )
    steps: list[Step] = [PadToSquare("top-left"), Resize((nudenet.SIZE, nudenet.SIZE))]
    return kept, transform_of(photo.width, photo.height, steps)


def test_the_ground_truth_file_is_the_catalogs() -> None:
    assert json.loads(GROUND_TRUTH.read_text()) == nudenet.ground_truth()


def test_nudenet_finds_the_astronauts_face() -> None:
    astronaut = nudenet.PHOTOS[0]
    found, transform = detect(astronaut)
    best = found.take(np.array([0]))
    assert nudenet.LABELS[int(best.classes[0])] == "FACE_FEMALE"
    x, y, w, h = astronaut.faces[0].bbox
    box = transform.to_original(best.boxes)[0]
    assert iou(box, [[x, y, x + w, y + h]])[0] >= 0.5


def run_on_all() -> list[dict[str, Any]]:
    results = []
    for image_id, photo in enumerate(nudenet.PHOTOS, start=1):
        found, transform = detect(photo)
        ids = list(range(1, len(nudenet.LABELS) + 1))
        results += to_coco(image_id, found, transform, category_ids=ids)
    return results


def test_nudenet_map_on_the_annotated_photos() -> None:
    results = run_on_all()
    metrics = coco_metrics(json.loads(GROUND_TRUTH.read_text()), results)
    # Both faces found with the right category and ranked first within it (AP@.5 = 1). Their
    # IoUs with the hand-drawn boxes (0.82 astronaut, 0.78 camera) count at 7 and 6 of the 10
    # thresholds: mAP@[.5:.95] = (0.7 + 0.6) / 2. The false positive on the coffee photo is a
    # class no image is annotated with, which pycocotools leaves out of the mean. Both IoUs
    # reach .75 (AP75 = 1); each face is the one detection of its category on its photo, so
    # AR@1 = AR@10 = AR@100 = the mean of 7/10 and 6/10. Both faces are medium (87 x 98 and
    # 74 x 66 pixels, between 32² and 96²): small and large are undefined, left out.
    medium = {"map": 0.65, "map50": 1.0, "map75": 1.0, "map_medium": 0.65}
    recalls = {"ar1": 0.65, "ar10": 0.65, "recall": 0.65, "ar_medium": 0.65}
    assert metrics == pytest.approx(medium | recalls)


def test_catalog_part_copies_the_pinned_files(tmp_path: Path) -> None:
    (model,) = nudenet.export(tmp_path)
    dataset = nudenet.write_dataset(tmp_path)
    assert (tmp_path / "nudenet" / nudenet.ONNX_FILE).stat().st_size == 12150158
    written = json.loads((tmp_path / nudenet.DATASET / "instances.json").read_text())
    assert written == nudenet.ground_truth()
    images = sorted(p.name for p in (tmp_path / nudenet.DATASET / "images").iterdir())
    assert images == sorted(nudenet.file_name(p) for p in nudenet.PHOTOS)
    assert model.exists() and dataset.exists()
