"""A package's model as its wheel ships it, run through processing code (issue 50, decision
220): magika 1.0.3's file-type classifier (Apache-2.0), its ``model.onnx`` byte for byte.

magika computes its input from a file's bytes (the first and last 1024 bytes, whitespace
stripped, padded with token 256); that used to be done by hand into ``.npy`` files. Here the
manifest's ``preprocess`` computes it from each sample's bytes, reading the model's own
``config.min.json``, and ``postprocess`` hands the model's ``target_label`` scores on as the
declared ``content_type``. Each sample's top class equals the label magika's own inference
gives (``Magika().identify_path(...).prediction.dl``), so the run's top-1 is magika's.

Each sample is its file's bytes as a 1-D uint8 ``.npy`` file; the code turns it back into the
bytes. The model, its code and the dataset are the catalog's ``magika`` part
(``pinbench.catalog.magika``), published as the catalog writes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pinbench.catalog import magika
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import array_of, run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.helpers import sha
from tests.package_models import package_file


def test_magikas_model_runs_from_its_wheel_scored_as_magikas_own_labels(
    ws: Workspace, tmp_path: Path, catalog_dir: Path
) -> None:
    from magika import Magika, __version__

    assert __version__ == "1.0.3"
    onnx, config = package_file("magika", magika.MEMBER), package_file("magika", magika.CONFIG)
    space: list[str] = json.loads(config.read_text())["target_labels_space"]
    framework = catalog_dir / "framework-onnxruntime.yaml"
    publish(ws, load_manifest(framework), manifest_dir=catalog_dir, publisher="test")
    for manifest in (*magika.write_datasets(tmp_path), *magika.export(tmp_path)):
        publish(ws, load_manifest(manifest), manifest_dir=tmp_path, publisher="test")
    samples = magika.samples()
    labels = [kind for _, (kind, _) in sorted(samples.items())]
    request = {
        "model": f"{magika.NAME}@1",
        "dataset": f"{magika.DATASET}@1",
        "scenario": {"mode": "accuracy"},
    }
    lock = service.lock(ws, parse_request(request))[0]
    pinned = next(a for a in lock.body.artifacts if a.kind == "model")
    assert {f.path: f.sha256 for f in pinned.files}["model.onnx"] == sha(onnx.read_bytes())

    info = show_run(ws, run_lockfile(ws, lock, say=lambda _: None, allow_code=True).id)

    # magika's own inference on the same files
    reference = Magika()
    theirs, their_scores = [], []
    for name, (_, content) in sorted(samples.items()):
        path = tmp_path / "files" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
        prediction = reference.identify_path(path).prediction
        theirs.append(str(prediction.dl.label))
        their_scores.append(prediction.score)
    outputs = array_of(ws, info["details"]["outputs_sha256"], "outputs")
    ours = [space[i] for i in np.argmax(outputs, axis=1)]
    assert ours == theirs
    # the same features give the same scores (to float32's last bits, one file a call each)
    assert np.max(outputs, axis=1).tolist() == pytest.approx(their_scores, rel=1e-6)
    assert info["top1"] == sum(t == k for t, k in zip(theirs, labels, strict=True)) / len(labels)
    assert info["top1"] >= 0.5  # the features are magika's: most files are named right
    assert info["details"]["processing"]["preprocess"]["code"] == "magika_code.py:features"
