"""PP-OCR's text direction classifier from the PyPI package ``rapidocr-onnxruntime`` 1.4.4:
``ch_ppocr_mobile_v2.0_cls_infer.onnx`` taken out of the pinned wheel as data (its bytes
unmodified, pinned by sha256; nothing of the package installed), and a dataset of text lines
rendered here, upright (class ``0``) and turned half a turn (``180``).

The model's preprocessing is rapidocr's ``TextClassifier.resize_norm_img`` as manifest steps:
BGR, ``(x / 255 - 0.5) / 0.5``, height 48 keeping the aspect ratio, width at most 192, padded
right with 0 (decision 125 for the class names). ``tests/test_catalog_wheels.py`` checks a
run's top-1 and every sample's class against ONNX Runtime on the package's own preprocessing.

Licences: rapidocr-onnxruntime is Apache-2.0 (its models are PaddleOCR's, Apache-2.0); the
lines are rendered with Pillow's bundled font (Aileron, CC0) by this module.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dump, entry
from pinbench.catalog.photos import nested_entry

NAME = "vision/ppocr-direction-cls"
DATASET = "text-lines-direction"
VERSION = "1.0.0"
PACKAGE = "rapidocr-onnxruntime"
MEMBER = "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"
ONNX_FILE = "ch_ppocr_mobile_v2.0_cls_infer.onnx"
INPUT = "x"
OUTPUT = "save_infer_model/scale_0.tmp_1"
"""(N, 2) probabilities of 0 and 180 degrees."""
CLASSES = ("0", "180")
"""rapidocr's config.yaml: ``Cls.label_list``."""
TEXTS = (
    "pinbench", "Hello 42", "OCR test", "Benchmark", "latency p90", "lockfile",
    "sha256 digest", "ONNX Runtime", "model 1.0.0", "Offline 128/s", "The quick fox",
    "SingleStream",
)  # fmt: skip
STEPS: list[dict[str, Any]] = [  # the pad is 0 after normalising, so resize after it
    {"decode": {"color_mode": "bgr"}},
    {"normalize": {"mean": [127.5], "std": [127.5]}},
    {"resize_height": {"height": 48, "max_width": 192, "value": 0}},
    {"layout": {"to": "NCHW"}},
]


def rendered(text: str, degrees: int) -> bytes:
    """Black text on a white line 32 pixels high, turned by ``degrees``, as PNG bytes."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=22)
    x0, _, x1, _ = font.getbbox(text)
    image = Image.new("RGB", (int(x1 - x0) + 16, 32), "white")
    ImageDraw.Draw(image).text((8 - x0, 4), text, fill="black", font=font)
    buf = io.BytesIO()
    image.rotate(degrees).save(buf, format="PNG")
    return buf.getvalue()


def samples() -> dict[str, bytes]:
    """Each line's path (``lines/CLASS/N.png``) and PNG bytes, upright and turned."""
    return {
        f"lines/{degrees}/{n:02d}.png": rendered(text, int(degrees))
        for degrees in CLASSES
        for n, text in enumerate(TEXTS)
    }


def write_dataset(root: Path) -> Path:
    """The rendered lines under ``root/text-lines-direction/`` and their dataset manifest."""
    base = root / DATASET
    if base.exists():
        shutil.rmtree(base)
    files = []
    for rel, data in sorted(samples().items()):
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files.append(nested_entry(root, base, path))
    (base / "classes.txt").write_text("".join(f"{c}\n" for c in CLASSES))
    files.append(nested_entry(root, base, base / "classes.txt"))
    return dump(
        root / f"dataset-{DATASET}.yaml",
        {
            "kind": "dataset",
            "name": DATASET,
            "version": VERSION,
            "description": (
                f"{len(TEXTS)} short lines of text rendered with Pillow's bundled font, "
                "upright (0) and turned half a turn (180)"
            ),
            "license": "CC0-1.0",
            "samples": 2 * len(TEXTS),
            "data": {"format": "images", "path": "lines"},
            "labels": {"format": "imagefolder", "names": "classes.txt", "classes": len(CLASSES)},
            "files": files,
        },
    )


def export(root: Path) -> list[Path]:
    """The wheel's ONNX file under ``root/ppocr-cls/`` and its model manifest."""
    from pinbench.catalog.wheels import fetch

    folder = root / "ppocr-cls"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(fetch(PACKAGE, MEMBER), folder / ONNX_FILE)
    manifest = dump(
        root / "model-ppocr-direction-cls.yaml",
        {
            "kind": "model",
            "name": NAME,
            "version": VERSION,
            "description": (
                "PP-OCR mobile v2.0 text direction classifier (0 or 180 degrees) as the PyPI "
                "package rapidocr-onnxruntime 1.4.4 ships it"
            ),
            "license": "Apache-2.0",
            "references": ["https://pypi.org/project/rapidocr-onnxruntime/1.4.4/"],
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": [entry(root, folder / ONNX_FILE)],
            "inputs": [{"name": INPUT, "type": "image", "shape": [3, 48, 192], "steps": STEPS}],
            "outputs": [{"name": OUTPUT, "type": "classification"}],
        },
    )
    return [manifest]
