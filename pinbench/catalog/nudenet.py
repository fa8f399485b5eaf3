"""NudeNet 3.4.2's detector (PyPI ``nudenet``): its ONNX file copied as is (pinned by sha256),
and five photos scikit-image ships, two with a face annotated by hand, as COCO ground truth.

Catalog part ``nudenet`` (decisions 91 and 93): a ``type: detection`` output (layout
``yolov8``, NudeNet's threshold and NMS), its class names as ``labels.txt`` matched to the
dataset's COCO categories, and a ``task: detection`` dataset with ``coco-json`` labels.

The model (``nudenet/320n.onnx``): an ultralytics YOLOv8n export (its metadata: ultralytics
8.2.46, ``imgsz [320, 320]``, stride 32), input ``images`` float32 ``(N, 3, H, W)`` in [0, 1],
output ``output0`` ``(N, 22, A)``: per anchor ``cx, cy, w, h`` in input pixels then 18 class
scores, no objectness (layout ``yolov8``; A = 2100 at 320x320). Its pipeline as the package runs
it (``nudenet/nudenet.py``, ``NudeDetector.detect``): ``cv2.imread`` (BGR), then
``cvtColor(RGBA2BGR)``, which on three channels swaps them to RGB, and ``blobFromImage(...,
swapRB=True)``, which swaps them back, so the model is fed **BGR** (measured: the blob is the
BGR image's to float32 rounding, 0.5 to 0.85 away from the RGB one on the colour photos); the
image padded to a square of its longer side at the bottom and right with black (the image at the
top-left), the square resized to 320x320 by OpenCV's bilinear without antialiasing
(``blobFromImage`` -> ``cv2.resize`` ``INTER_LINEAR``: ``resize: {antialias: false}``, within 1
grey level of it), scaled by 1/255; boxes with a best score >= 0.2, then
``cv2.dnn.NMSBoxes(boxes, scores, 0.25, 0.45)``: a score above 0.25, one greedy NMS over every
class (``nms: {class_agnostic: true}``). Declared so: ``score_threshold`` 0.25 (pinbench keeps a
score of exactly 0.25, OpenCV drops it), NMS at IoU 0.45. NudeNet clips each box to the image
before its NMS and truncates the box it returns with ``int()``; pinbench suppresses in input
pixels, clips after, and keeps the fractions (``tests/test_detection_nudenet.py`` holds the two
within a couple of pixels and a small score tolerance).

Licences: the ONNX file's own metadata says ``AGPL-3.0 License (https://ultralytics.com/license)``
(ultralytics' weights licence), and the wheel ships the AGPL-3.0 as ``LICENSE`` although its
metadata says MIT: the weights are treated as AGPL-3.0. The photos: ``astronaut`` NASA (public
domain), ``camera`` CC0 (Lav Varshney), ``chelsea`` CC0 (Stefan van der Walt), ``coffee`` CC0
(Rachel Michetti), ``rocket`` SpaceX (public domain), per ``skimage/data/_fetchers.py``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dump, entry, pinned
from pinbench.catalog.photos import nested_entry, package_dir

NAME = "vision/nudenet-320n"
DATASET = "skimage-faces"
VERSION = "1.0.0"
PACKAGE = "nudenet"
ONNX_FILE = "320n.onnx"
ONNX_SHA256 = "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f"
SIZE = 320
INPUT = "images"
OUTPUT = "output0"
LAYOUT = "yolov8"
LABELS = (
    "FEMALE_GENITALIA_COVERED",
    "FACE_FEMALE",
    "BUTTOCKS_EXPOSED",
    "FEMALE_BREAST_EXPOSED",
    "FEMALE_GENITALIA_EXPOSED",
    "MALE_BREAST_EXPOSED",
    "ANUS_EXPOSED",
    "FEET_EXPOSED",
    "BELLY_COVERED",
    "FEET_COVERED",
    "ARMPITS_COVERED",
    "ARMPITS_EXPOSED",
    "FACE_MALE",
    "BELLY_EXPOSED",
    "MALE_GENITALIA_EXPOSED",
    "ANUS_COVERED",
    "FEMALE_BREAST_COVERED",
    "BUTTOCKS_COVERED",
)
"""The output's class columns, in order (``nudenet.py``'s ``__labels`` and the ONNX metadata's
``names``). COCO category ids are the column + 1."""
SCORE_THRESHOLD = 0.25
IOU_THRESHOLD = 0.45
LICENCE = "LicenseRef-public-domain AND CC0-1.0"


@dataclass(frozen=True, slots=True)
class Face:
    label: str
    """One of ``LABELS``."""
    bbox: tuple[int, int, int, int]
    """COCO ``[x, y, w, h]`` in the photo's pixels."""
    how: str


@dataclass(frozen=True, slots=True)
class FacePhoto:
    name: str
    path: str
    """Its path inside scikit-image."""
    sha256: str
    width: int
    height: int
    licence: str
    faces: tuple[Face, ...]


PHOTOS = (
    FacePhoto(
        "astronaut",
        "data/astronaut.png",
        "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
        512,
        512,
        "public domain (NASA)",
        (
            Face(
                "FACE_FEMALE",
                (181, 80, 87, 98),
                "Eileen Collins, frontal: x 181..268 the outermost skin columns of the cheeks "
                "at eye and mouth level (hair beyond), y 80..178 from the highest forehead skin "
                "under the fringe to the lowest point of the chin",
            ),
        ),
    ),
    FacePhoto(
        "camera",
        "data/camera.png",
        "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a",
        512,
        512,
        "CC0-1.0 (Lav Varshney)",
        (
            Face(
                "FACE_MALE",
                (180, 128, 74, 66),
                "a man in profile at a camera: x 180..254 from the back of the ear to the tip "
                "of the nose (the camera hides the face beyond), y 128..194 from the top of the "
                "ear and the forehead's hairline to the bottom of the chin",
            ),
        ),
    ),
    FacePhoto(
        "chelsea",
        "data/chelsea.png",
        "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
        451,
        300,
        "CC0-1.0 (Stefan van der Walt)",
        (),
    ),
    FacePhoto(
        "coffee",
        "data/coffee.png",
        "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
        600,
        400,
        "CC0-1.0 (Rachel Michetti)",
        (),
    ),
    FacePhoto(
        "rocket",
        "data/rocket.jpg",
        "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
        640,
        427,
        "public domain (SpaceX)",
        (),
    ),
)

STEPS: list[dict[str, Any]] = [
    {"decode": {"color_mode": "bgr"}},
    {"pad": {"to": "square", "placement": "top-left", "value": 0}},
    {
        "resize": {
            "size": [SIZE, SIZE],
            "method": "bilinear",
            "keep_aspect_ratio": False,
            "antialias": False,
        }
    },
    {"normalize": {"scale": 1 / 255}},
    {"layout": {"to": "NCHW"}},
]
"""NudeNet's pipeline as manifest steps."""
LABELS_FILE = "labels.txt"
MAX_DETECTIONS = 100


def onnx_source() -> Path:
    """The package's ONNX file, checked against its pinned sha256 (found without importing
    ``nudenet``, whose code needs OpenCV)."""
    return pinned(package_dir(PACKAGE) / ONNX_FILE, ONNX_SHA256, install="nudenet==3.4.2")


def photo_source(photo: FacePhoto) -> Path:
    return pinned(package_dir("skimage") / photo.path, photo.sha256, install="scikit-image==0.26.0")


def file_name(photo: FacePhoto) -> str:
    return f"{photo.name}{Path(photo.path).suffix}"


def ground_truth() -> dict[str, Any]:
    """The photos' faces as COCO ground truth; image ids count from 1 in ``PHOTOS`` order."""
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for image_id, photo in enumerate(PHOTOS, start=1):
        images.append(
            {
                "id": image_id,
                "file_name": file_name(photo),
                "width": photo.width,
                "height": photo.height,
                "license": photo.licence,
            }
        )
        for face in photo.faces:
            x, y, w, h = face.bbox
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": LABELS.index(face.label) + 1,
                    "bbox": [x, y, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                    "how": face.how,
                }
            )
    return {
        "info": {
            "description": (
                "faces in photos scikit-image ships, annotated by hand; only the FACE_* "
                "categories are annotated, so only they are measured"
            ),
            "version": VERSION,
        },
        "images": images,
        "annotations": annotations,
        "categories": [{"id": i + 1, "name": label} for i, label in enumerate(LABELS)],
    }


def write_dataset(root: Path) -> Path:
    """The photos under ``root/skimage-faces/images/`` and ``instances.json`` (COCO), with a
    dataset manifest."""
    base = root / DATASET
    if base.exists():
        shutil.rmtree(base)
    folder = base / "images"
    folder.mkdir(parents=True)
    files = []
    for photo in PHOTOS:
        dest = folder / file_name(photo)
        shutil.copyfile(photo_source(photo), dest)
        files.append(nested_entry(root, base, dest))
    labels = base / "instances.json"
    labels.write_text(json.dumps(ground_truth(), indent=1, sort_keys=True) + "\n")
    files.append(nested_entry(root, base, labels))
    return dump(
        root / f"dataset-{DATASET}.yaml",
        {
            "kind": "dataset",
            "name": DATASET,
            "version": VERSION,
            "description": (
                f"{len(PHOTOS)} photos shipped by scikit-image, faces annotated by hand "
                "(COCO boxes)"
            ),
            "license": LICENCE,
            "samples": len(PHOTOS),
            "data": {"format": "images", "path": "images"},
            "task": "detection",
            "labels": {"format": "coco-json", "path": "instances.json"},
            "files": files,
        },
    )


def export(root: Path) -> list[Path]:
    """The package's ONNX file and its class names under ``root/nudenet/``, and the model
    manifest."""
    folder = root / "nudenet"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(onnx_source(), folder / ONNX_FILE)
    (folder / LABELS_FILE).write_text("".join(f"{label}\n" for label in LABELS))
    manifest = dump(
        root / "model-nudenet.yaml",
        {
            "kind": "model",
            "name": NAME,
            "version": VERSION,
            "description": (
                "NudeNet 320n (ultralytics YOLOv8n, 18 classes incl. FACE_FEMALE and "
                "FACE_MALE) from the PyPI package nudenet 3.4.2"
            ),
            "license": "AGPL-3.0-only",
            "references": [
                "https://github.com/notAI-tech/NudeNet",
                "https://pypi.org/project/nudenet/3.4.2/",
            ],
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": [entry(root, folder / ONNX_FILE), entry(root, folder / LABELS_FILE)],
            "inputs": [
                {
                    "name": INPUT,
                    "type": "image",
                    "element_type": "float32",
                    "shape": [3, SIZE, SIZE],
                    "steps": STEPS,
                }
            ],
            "outputs": [
                {
                    "name": OUTPUT,
                    "type": "detection",
                    "labels": {"path": LABELS_FILE},
                    "detection": {
                        "layout": LAYOUT,
                        "box_format": "cxcywh",
                        "normalized": False,
                        "score_threshold": SCORE_THRESHOLD,
                        "nms": {
                            "iou": IOU_THRESHOLD,
                            "max_detections": MAX_DETECTIONS,
                            "class_agnostic": True,
                        },
                    },
                }
            ],
            "attributes": {"package": "nudenet==3.4.2", "weights_license": "AGPL-3.0"},
        },
    )
    return [manifest]
