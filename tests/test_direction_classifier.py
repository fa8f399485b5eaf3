"""PP-OCR's text direction classifier, end to end as a classification whose class names are
the strings ``0`` and ``180`` (decision 125).

``ch_ppocr_mobile_v2.0_cls_infer.onnx`` as rapidocr-onnxruntime 1.4.4 publishes it (the file's
bytes, unmodified) runs through the CLI on an imagefolder of text lines rendered here, folders
``0`` (upright) and ``180`` (the same lines turned half a turn), with a names file ``0``,
``180``. PaddleOCR's cls preprocessing is declared as steps: BGR, ``(x / 255 - 0.5) / 0.5``,
height 48 keeping the aspect ratio, width at most 192, padded right with 0 (rapidocr's
``TextClassifier.resize_norm_img``). The run's top-1, and each sample's predicted class, equal
ONNX Runtime's on the same inputs computed here.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import yaml
from PIL import Image

from pinbench.catalog import frameworks
from pinbench.catalog.ppocr import CLASSES, OUTPUT, STEPS, rendered
from pinbench.catalog.ppocr import MEMBER as CLASSIFIER
from tests.helpers import Cli, dump, write_files
from tests.package_models import package_file

TEXTS = ["pinbench", "Hello 42", "OCR test"]


def paddle_cls_input(png: bytes) -> npt.NDArray[np.float32]:
    """rapidocr's ``resize_norm_img`` for cls_image_shape [3, 48, 192], written out, with
    Pillow's bilinear on the normalised values (pinbench resizes with Pillow, not OpenCV)."""
    bgr = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))[..., ::-1]
    x = (bgr.astype(np.float32) - np.float32(127.5)) / np.float32(127.5)
    h, w = x.shape[:2]
    width = min(math.ceil(48 * (w / h)), 192)
    channels = [
        np.asarray(
            Image.fromarray(x[..., c], mode="F").resize((width, 48), Image.Resampling.BILINEAR)
        )
        for c in range(3)
    ]
    padded = np.zeros((3, 48, 192), np.float32)
    padded[:, :, :width] = np.stack(channels)
    return padded[None]


def direct_classes(model: Path, images: list[bytes]) -> list[str]:
    """Each image's top-1 class name from ONNX Runtime's output (lower index on a tie)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    found = []
    for png in images:
        (probs,) = session.run([OUTPUT], {"x": paddle_cls_input(png)})
        assert probs.shape == (1, len(CLASSES))
        found.append(CLASSES[int(np.argmax(probs[0]))])
    return found


def test_pp_ocr_direction_classifier_scores_as_the_direct_computation(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = package_file("rapidocr-onnxruntime", CLASSIFIER)
    samples = {
        f"lines/{degrees}/{i}.png": rendered(text, int(degrees))
        for degrees in CLASSES
        for i, text in enumerate(TEXTS)
    }
    write_files(tmp_path, {**samples, "classes.txt": "".join(f"{c}\n" for c in CLASSES).encode()})
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "onnxruntime"))).code == 0

    made = cli(
        "manifest", "dataset", "lines", "--labels", "imagefolder", "--names", "classes.txt",
        "--name", "test/directions", "-o", "directions.yaml",
    )  # fmt: skip
    assert made.code == 0, made.err
    dataset = yaml.safe_load(Path("directions.yaml").read_text())
    assert dataset["labels"] == {"format": "imagefolder", "names": "classes.txt"}
    assert cli("publish", "directions.yaml").code == 0

    manifest = {
        "kind": "model",
        "name": "test/direction",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": write_files(tmp_path / "cls", {"cls.onnx": model.read_bytes()}),
        "inputs": [{"name": "x", "type": "image", "shape": [3, 48, 192], "steps": STEPS}],
        "outputs": [{"name": OUTPUT, "type": "classification"}],
    }
    done = cli("publish", str(dump(Path("cls/model.yaml"), manifest)))
    assert done.code == 0, done.err
    request = {
        "model": "test/direction@1",
        "dataset": "test/directions@1",
        "scenario": {"mode": "accuracy"},
    }
    assert cli("lock", str(dump(Path("request.yaml"), request)), "-o", "cls.lock").code == 0
    cli("run", "cls.lock", "--runner", "local")
    (listed,) = json.loads(cli("runs", "list", "--json").out)
    run = json.loads(cli("runs", "show", listed["id"], "--json").out)
    assert run["status"] == "succeeded", run["error"]

    order = sorted(samples)  # samples in path order: lines/0/..., then lines/180/...
    found = direct_classes(model, [samples[p] for p in order])
    truth = [p.split("/")[1] for p in order]
    assert run["top1"] == sum(f == t for f, t in zip(found, truth, strict=True)) / len(order)
    rows = run["details"]["samples"]
    assert [(r["sample"], r["truth_name"], r["top1_name"]) for r in rows] == list(
        zip(order, truth, found, strict=True)
    )
    assert run["top1"] == 1.0  # PP-OCR tells upright rendered Latin lines from turned ones
