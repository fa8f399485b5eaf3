"""PP-OCRv4's text detector (``ch_PP-OCRv4_det_infer.onnx``) from rapidocr-onnxruntime 1.4.4's
wheel, as data (its bytes unmodified), on three images of text rendered here at known places
(``text-boxes``, COCO JSON): each line's box is its ink from left to right and the font's
ascender to descender from top to bottom (the line height text detection datasets annotate).

Its preprocessing is PaddleOCR's ``DetResizeForTest`` (each side a multiple of 32, the longer
at most 960) and ImageNet's mean and std on BGR; its output a DBNet probability map
(``layout: probability-map``). ``tests/test_probability_map.py`` checks a run against ONNX
Runtime on PaddleOCR's preprocessing written out and the map post-processed with SciPy.

Licences: rapidocr-onnxruntime is Apache-2.0 (the model is PaddleOCR's, Apache-2.0); the images
are rendered with Pillow's bundled font (Aileron, CC0) by this module.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dataset_manifest, dump, entry, wheel_model
from pinbench.catalog.photos import nested_entry

NAME = "vision/ppocr-v4-det"
DATASET = "text-boxes"
VERSION = "1.0.0"
PACKAGE = "rapidocr-onnxruntime"
MEMBER = "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
INPUT = "x"
OUTPUT = "sigmoid_0.tmp_0"
MEAN = [123.675, 116.28, 103.53]  # ImageNet's, on BGR as PaddleOCR applies them
STD = [58.395, 57.12, 57.375]
SIZES = [(200, 100), (330, 120), (250, 80)]  # width, height: three sizes, three input sizes
LINES = [
    [(12, 14, "pinbench"), (40, 60, "HELLO 42")],
    [(20, 30, "text detector"), (150, 80, "wide image")],
    [(8, 8, "DBNet"), (90, 30, "maps"), (130, 52, "boxes 25")],
]
STEPS: list[dict[str, Any]] = [
    {"decode": {"color_mode": "bgr"}},
    {"resize_multiple": {"multiple": 32, "limit_side": 960, "limit_type": "max"}},
    {"normalize": {"mean": MEAN, "std": STD}},
    {"layout": {"to": "NCHW"}},
]
MAP = {"threshold": 0.3, "box_threshold": 0.5, "unclip_ratio": 1.6}
"""rapidocr's config.yaml ``Det``: thresh, box_thresh, unclip_ratio."""


def rendered() -> tuple[list[bytes], dict[str, Any]]:
    """The PNG images (black text on white at ``LINES``' places) and the COCO JSON of their
    line boxes."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=20)
    ascent, descent = font.getmetrics()  # type: ignore[union-attr]
    images: list[bytes] = []
    annotations: list[dict[str, Any]] = []
    for image_id, (lines, size) in enumerate(zip(LINES, SIZES, strict=True), start=1):
        image = Image.new("RGB", size, "white")
        draw = ImageDraw.Draw(image)
        for x, y, text in lines:
            draw.text((x, y), text, fill="black", font=font)
            x0, _, x1, _ = draw.textbbox((x, y), text, font=font)
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": 1,
                    "bbox": [x0, y, x1 - x0, ascent + descent],
                    "iscrowd": 0,
                }
            )
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        images.append(buf.getvalue())
    coco = {
        "images": [
            {"id": i, "file_name": f"{i}.png", "width": w, "height": h}
            for i, (w, h) in enumerate(SIZES, start=1)
        ],
        "categories": [{"id": 1, "name": "text"}],
        "annotations": annotations,
    }
    return images, coco


def write_dataset(root: Path) -> Path:
    """The images under ``root/text-boxes/images/`` with ``instances.json``, and their dataset
    manifest (detection)."""
    base = root / DATASET
    if base.exists():
        shutil.rmtree(base)
    (base / "images").mkdir(parents=True)
    images, coco = rendered()
    files = []
    for n, png in enumerate(images, start=1):
        path = base / "images" / f"{n}.png"
        path.write_bytes(png)
        files.append(nested_entry(root, base, path))
    (base / "instances.json").write_text(json.dumps(coco))
    files.append(nested_entry(root, base, base / "instances.json"))
    return dataset_manifest(
        root,
        DATASET,
        version=VERSION,
        description=f"{len(images)} images of text lines rendered with Pillow's bundled font, "
        "each line's box known (COCO JSON)",
        license="CC0-1.0",
        task="detection",
        samples=len(images),
        data={"format": "images", "path": "images"},
        labels={"format": "coco-json", "path": "instances.json"},
        files=files,
    )


def export(root: Path) -> Path:
    """The wheel's detector under ``root/ppocr-v4-det/`` with its one class name, and its
    manifest ``root/model-ppocr-v4-det.yaml``."""
    from pinbench.catalog.wheels import copy_member

    folder = root / "ppocr-v4-det"
    path = copy_member(PACKAGE, MEMBER, folder)
    (folder / "labels.txt").write_text("text\n")
    head = wheel_model(
        NAME, VERSION, what="PP-OCRv4 text detector (DBNet)", package=PACKAGE,
        license="Apache-2.0",
    )  # fmt: skip
    return dump(
        root / "model-ppocr-v4-det.yaml",
        head
        | {
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": [entry(root, path), entry(root, folder / "labels.txt")],
            "inputs": [{"name": INPUT, "type": "image", "steps": STEPS}],
            "outputs": [
                {
                    "name": OUTPUT,
                    "type": "detection",
                    "labels": {"path": "labels.txt"},
                    "detection": {"layout": "probability-map", "probability_map": MAP},
                }
            ],
        },
    )
