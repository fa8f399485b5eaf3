"""Three of PP-OCR's models from the PyPI package ``rapidocr-onnxruntime`` 1.4.4, taken out of
the pinned wheel as data (their bytes unmodified, pinned by sha256; nothing of the package
installed), and text lines rendered here:

- the text direction classifier ``ch_ppocr_mobile_v2.0_cls_infer.onnx`` on the lines upright
  (class ``0``) and turned half a turn (``180``): ``text-lines-direction``. Its preprocessing is
  rapidocr's ``TextClassifier.resize_norm_img`` as manifest steps: BGR, ``(x / 255 - 0.5) /
  0.5``, height 48 keeping the aspect ratio, width at most 192, padded right with 0 (decision
  125 for the class names);
- the PP-OCRv4 recogniser ``ch_PP-OCRv4_rec_infer.onnx`` on the lines upright with their texts
  (``text-lines``, scored by CER, WER and exact match): the same preprocessing to width 320,
  its CTC alphabet read from the ONNX file's own metadata, the space class after it;
- the PP-OCRv4 text detector ``ch_PP-OCRv4_det_infer.onnx`` on images of lines at known boxes
  (``text-boxes``, ``pinbench.catalog.ppocr_det``).

``tests/test_catalog_wheels.py`` checks each run against ONNX Runtime on the package's own
preprocessing and decoding.

Licences: rapidocr-onnxruntime is Apache-2.0 (its models are PaddleOCR's, Apache-2.0); the
lines are rendered with Pillow's bundled font (Aileron, CC0) by this module.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dataset_manifest, dump, entry, wheel_model
from pinbench.catalog.photos import nested_entry

NAME = "vision/ppocr-direction-cls"
DATASET = "text-lines-direction"
REC_NAME = "vision/ppocr-v4-rec"
REC_DATASET = "text-lines"
REC_MEMBER = "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
REC_OUTPUT = "softmax_11.tmp_0"
VERSION = "1.0.0"
PACKAGE = "rapidocr-onnxruntime"
MEMBER = "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"
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


def write_datasets(root: Path) -> list[Path]:
    """The three datasets' files and manifests under ``root`` (the detector's:
    ``pinbench.catalog.ppocr_det``)."""
    from pinbench.catalog import ppocr_det

    return [write_dataset(root), write_texts(root), ppocr_det.write_dataset(root)]


def write_texts(root: Path) -> Path:
    """The lines upright under ``root/text-lines/lines/`` with ``texts.csv``, and their
    dataset manifest (text recognition)."""
    base = root / REC_DATASET
    if base.exists():
        shutil.rmtree(base)
    (base / "lines").mkdir(parents=True)
    files = []
    for n, text in enumerate(TEXTS):
        path = base / "lines" / f"{n:02d}.png"
        path.write_bytes(rendered(text, 0))
        files.append(nested_entry(root, base, path))
    (base / "texts.csv").write_text(
        "file,text\n" + "".join(f"{n:02d}.png,{text}\n" for n, text in enumerate(TEXTS))
    )
    files.append(nested_entry(root, base, base / "texts.csv"))
    return dataset_manifest(
        root,
        REC_DATASET,
        version=VERSION,
        description=f"{len(TEXTS)} short lines of text rendered with Pillow's bundled font",
        license="CC0-1.0",
        task="text-recognition",
        samples=len(TEXTS),
        data={"format": "images", "path": "lines"},
        labels={"format": "text-csv", "path": "texts.csv"},
        files=files,
    )


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
    return dataset_manifest(
        root,
        DATASET,
        version=VERSION,
        description=f"{len(TEXTS)} short lines of text rendered with Pillow's bundled font, "
        "upright (0) and turned half a turn (180)",
        license="CC0-1.0",
        samples=2 * len(TEXTS),
        data={"format": "images", "path": "lines"},
        labels={"format": "imagefolder", "names": "classes.txt", "classes": len(CLASSES)},
        files=files,
    )


def export(root: Path) -> list[Path]:
    """The three models' files and manifests under ``root``."""
    from pinbench.catalog import ppocr_det

    rec_steps = [*STEPS]
    rec_steps[2] = {"resize_height": {"height": 48, "max_width": 320, "value": 0}}
    ctc = {"blank": 0, "alphabet": {"metadata": "character"}, "space": True}
    return [
        _export(
            root, "ppocr-direction-cls", MEMBER, NAME,
            "PP-OCR mobile v2.0 text direction classifier (0 or 180 degrees)",
            {"name": INPUT, "type": "image", "shape": [3, 48, 192], "steps": STEPS},
            {"name": OUTPUT, "type": "classification"},
        ),
        _export(
            root, "ppocr-v4-rec", REC_MEMBER, REC_NAME,
            "PP-OCRv4 text recogniser (CTC over its own alphabet)",
            {"name": INPUT, "type": "image", "shape": [3, 48, 320], "steps": rec_steps},
            {"name": REC_OUTPUT, "type": "text", "ctc": ctc},
        ),
        ppocr_det.export(root),
    ]  # fmt: skip


def _export(
    root: Path,
    key: str,
    member: str,
    name: str,
    what: str,
    model_input: dict[str, Any],
    output: dict[str, Any],
) -> Path:
    """The wheel's ``member`` under ``root/KEY/`` (its own file name) and its manifest
    ``root/model-KEY.yaml``."""
    from pinbench.catalog.wheels import copy_member

    path = copy_member(PACKAGE, member, root / key)
    head = wheel_model(name, VERSION, what=what, package=PACKAGE, license="Apache-2.0")
    return dump(
        root / f"model-{key}.yaml",
        head
        | {
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": [entry(root, path)],
            "inputs": [model_input],
            "outputs": [output],
        },
    )
