"""MTCNN's output network (ONet) from facenet-pytorch 2.6.0, exported to ONNX here and run by
pinbench as a model of three outputs, one of them scored as a classification.

The weights are the wheel's ``facenet_pytorch/data/onet.pt`` (a state dict), loaded by this
test with ``torch.load(weights_only=True)`` into ONet rebuilt here as
``facenet_pytorch/models/mtcnn.py`` defines it, and exported with ``torch.onnx.export``; pinbench
never reads the pickle. The ONNX model gives ``boxes`` (N, 4), ``landmarks`` (N, 10) and
``prob`` (N, 2): softmax over (not a face, face), declared ``type: classification``, the other
two ``type: tensor``.

The ground truth is made by a stated rule on scikit-image's photos, whose faces are annotated
by hand in ``tests/data/detection/skimage-faces.json`` (``pinbench.catalog.nudenet``): class
``face`` is a square crop centred on an annotated face, its side 1 or 1.25 times the box's
longer side; class ``other`` is a square crop that overlaps no annotated face. A names file
``other``, ``face`` puts the classes in ONet's order. MTCNN's preprocessing for ONet is
declared as steps: RGB, ``(x - 127.5) / 128``, resized to 48x48 by area. The run's top-1 and
each sample's class equal ONNX Runtime's on the same inputs computed here.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import yaml
from PIL import Image

from pinbench.catalog import frameworks, nudenet
from tests.helpers import Cli, dump, write_files
from tests.package_models import package_file

CLASSES = ["other", "face"]  # ONet's prob columns
SCALES = [1.0, 1.25]
OTHERS = [("astronaut", 0, 0), ("camera", 416, 416), ("coffee", 0, 0), ("rocket", 0, 0)]
OTHER_SIDE = 96
STEPS = [
    {"decode": {"color_mode": "rgb"}},
    {"normalize": {"mean": [127.5], "std": [128.0]}},
    {"resize": {"size": [48, 48], "method": "area"}},
    {"layout": {"to": "NCHW"}},
]


def onet_onnx(weights: Path, into: Path) -> bytes:
    """facenet-pytorch's ONet with the wheel's weights, as ONNX (opset 17, batch axis N),
    written to ``into``."""
    import torch
    from torch import nn

    class ONet(nn.Module):  # facenet_pytorch/models/mtcnn.py, layer for layer
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 32, kernel_size=3)
            self.prelu1 = nn.PReLU(32)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2 = nn.Conv2d(32, 64, kernel_size=3)
            self.prelu2 = nn.PReLU(64)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3 = nn.Conv2d(64, 64, kernel_size=3)
            self.prelu3 = nn.PReLU(64)
            self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv4 = nn.Conv2d(64, 128, kernel_size=2)
            self.prelu4 = nn.PReLU(128)
            self.dense5 = nn.Linear(1152, 256)
            self.prelu5 = nn.PReLU(256)
            self.dense6_1 = nn.Linear(256, 2)
            self.softmax6_1 = nn.Softmax(dim=1)
            self.dense6_2 = nn.Linear(256, 4)
            self.dense6_3 = nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.pool3(self.prelu3(self.conv3(x)))
            x = self.prelu4(self.conv4(x))
            x = x.permute(0, 3, 2, 1).contiguous()
            x = self.prelu5(self.dense5(x.view(x.shape[0], -1)))
            return self.dense6_2(x), self.dense6_3(x), self.softmax6_1(self.dense6_1(x))

    model = ONet()
    model.load_state_dict(torch.load(weights, weights_only=True))
    model.eval()
    names = ["boxes", "landmarks", "prob"]
    torch.onnx.export(
        model,
        (torch.zeros(1, 3, 48, 48),),
        into,
        input_names=["x"],
        output_names=names,
        dynamic_axes={n: {0: "N"} for n in ["x", *names]},
        opset_version=17,
        dynamo=False,
    )
    return into.read_bytes()


def png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG")
    return buf.getvalue()


def overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Whether two (left, top, right, bottom) boxes share any area."""
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def crops() -> dict[str, bytes]:
    """The samples by the test's rule: ``crops/face/...`` and ``crops/other/...``."""
    photos = {p.name: p for p in nudenet.PHOTOS}
    out: dict[str, bytes] = {}
    for photo in photos.values():
        with Image.open(nudenet.photo_source(photo)) as image:
            for n, face in enumerate(photo.faces):
                x, y, w, h = face.bbox
                for scale in SCALES:
                    half = max(w, h) * scale / 2
                    cx, cy = x + w / 2, y + h / 2
                    box = (round(cx - half), round(cy - half), round(cx + half), round(cy + half))
                    out[f"crops/face/{photo.name}-{n}-{scale}.png"] = png(image.crop(box))
    for name, left, top in OTHERS:
        photo = photos[name]
        box = (left, top, left + OTHER_SIDE, top + OTHER_SIDE)
        assert box[2] <= photo.width and box[3] <= photo.height
        faces = [(x, y, x + w, y + h) for x, y, w, h in (f.bbox for f in photo.faces)]
        assert not any(overlaps(box, f) for f in faces)  # the rule: no annotated face in it
        with Image.open(nudenet.photo_source(photo)) as image:
            out[f"crops/other/{name}-{left}-{top}.png"] = png(image.crop(box))
    return out


def onet_input(sample: bytes) -> npt.NDArray[np.float32]:
    """The steps written out: RGB, (x - 127.5) / 128, each channel to 48x48 by Pillow's box
    filter (pinbench's ``area``), NCHW."""
    rgb = np.asarray(Image.open(io.BytesIO(sample)).convert("RGB"), dtype=np.float32)
    x = (rgb - np.float32(127.5)) / np.float32(128.0)
    channels = [
        np.asarray(Image.fromarray(x[..., c], mode="F").resize((48, 48), Image.Resampling.BOX))
        for c in range(3)
    ]
    return np.stack(channels)[None]


def direct_classes(model: bytes, samples: list[bytes]) -> list[str]:
    import onnxruntime as ort

    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    found = []
    for sample in samples:
        (prob,) = session.run(["prob"], {"x": onet_input(sample)})
        assert prob.shape == (1, 2)
        found.append(CLASSES[int(np.argmax(prob[0]))])
    return found


@pytest.mark.filterwarnings("ignore:You are using the legacy TorchScript-based ONNX export")
@pytest.mark.filterwarnings("ignore:The feature will be removed")
def test_mtcnn_onet_prob_scores_as_the_direct_computation(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    weights = package_file("facenet-pytorch", "facenet_pytorch/data/onet.pt")
    model = onet_onnx(weights, tmp_path / "exported.onnx")
    samples = crops()
    names = "".join(f"{c}\n" for c in CLASSES).encode()
    write_files(tmp_path, {**samples, "classes.txt": names})
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "onnxruntime"))).code == 0
    made = cli(
        "manifest", "dataset", "crops", "--labels", "imagefolder", "--names", "classes.txt",
        "--name", "test/faces", "-o", "faces.yaml",
    )  # fmt: skip
    assert made.code == 0, made.err
    assert yaml.safe_load(Path("faces.yaml").read_text())["samples"] == len(samples)
    assert cli("publish", "faces.yaml").code == 0

    outputs: list[dict[str, Any]] = [
        {"name": "boxes", "type": "tensor"},
        {"name": "landmarks", "type": "tensor"},
        {"name": "prob", "type": "classification"},
    ]
    manifest = {
        "kind": "model",
        "name": "test/onet",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": write_files(tmp_path / "onet", {"onet.onnx": model}),
        "inputs": [{"name": "x", "type": "image", "shape": [3, 48, 48], "steps": STEPS}],
        "outputs": outputs,
    }
    done = cli("publish", str(dump(Path("onet/model.yaml"), manifest)))
    assert done.code == 0, done.err
    request = {"model": "test/onet@1", "dataset": "test/faces@1", "scenario": {"mode": "accuracy"}}
    assert cli("lock", str(dump(Path("request.yaml"), request)), "-o", "onet.lock").code == 0
    cli("run", "onet.lock", "--runner", "local")
    (listed,) = json.loads(cli("runs", "list", "--json").out)
    run = json.loads(cli("runs", "show", listed["id"], "--json").out)
    assert run["status"] == "succeeded", run["error"]

    order = sorted(samples)
    found = direct_classes(model, [samples[p] for p in order])
    truth = [p.split("/")[1] for p in order]
    assert run["top1"] == sum(f == t for f, t in zip(found, truth, strict=True)) / len(order)
    rows = run["details"]["samples"]
    assert [(r["sample"], r["truth_name"], r["top1_name"]) for r in rows] == list(
        zip(order, truth, found, strict=True)
    )
    assert run["top1"] == 1.0  # ONet tells these faces from these crops without them
