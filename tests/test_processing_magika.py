"""A package's model as its wheel ships it, run through processing code (issue 50, decision
220): magika 1.0.3's file-type classifier (Apache-2.0), its ``model.onnx`` byte for byte.

magika computes its input from a file's bytes (the first and last 1024 bytes, whitespace
stripped, padded with token 256); that used to be done by hand into ``.npy`` files. Here the
manifest's ``preprocess`` computes it from each sample's bytes, reading the model's own
``config.min.json``, and ``postprocess`` hands the model's ``target_label`` scores on as the
declared ``content_type``. Each sample's top class equals the label magika's own inference
gives (``Magika().identify_path(...).prediction.dl``), so the run's top-1 is magika's.

Until datasets of raw file bytes exist (issue 50 item 3), each sample is its file's bytes as a
1-D uint8 ``.npy`` file; the code turns it back into the bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.evaluator.records.history import show_run
from pinbench.evaluator.run import array_of, run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest, parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.helpers import model_manifest, sha, write_files
from tests.package_models import package_file

MODEL = "magika/models/standard_v3_3/model.onnx"
CONFIG = "magika/models/standard_v3_3/config.min.json"
CODE = '''\
import json

import numpy as np
import pytest


def features(sample, files):
    """magika 1.0.3's features (Magika._extract_features_from_seekable) of one file's bytes."""
    config = json.loads(files["config.min.json"].read_text())
    raw = np.load(sample, allow_pickle=False).tobytes()
    pad, beg_size, end_size = config["padding_token"], config["beg_size"], config["end_size"]
    n = min(config["block_size"], len(raw))
    beg = list(raw[:n].lstrip()[:beg_size])
    end = raw[len(raw) - n :].rstrip()
    end = list(end[max(0, len(end) - end_size) :])
    beg = beg + [pad] * (beg_size - len(beg))
    end = [pad] * (end_size - len(end)) + end
    return {"bytes": np.asarray(beg + end, dtype=np.int32)}


def scores(outputs, files):
    return {"content_type": outputs["target_label"]}
'''


def _samples() -> dict[str, tuple[str, bytes]]:
    """Files of known types, each past magika's few-bytes path: name -> (type, bytes)."""
    python = "".join(
        f"def f{i}(x: int) -> int:\n    return x * {i} + len(str(x))\n\n" for i in range(40)
    )
    records = [
        {"id": i, "name": f"item {i}", "tags": ["a", "b"], "ok": i % 2 == 0} for i in range(60)
    ]
    html = (
        "<!DOCTYPE html>\n<html><head><title>t</title></head><body>\n"
        + "".join(
            f'<div class="row"><p>Paragraph {i}</p><a href="/p/{i}">link</a></div>\n'
            for i in range(50)
        )
        + "</body></html>\n"
    )
    c = (
        "#include <stdio.h>\n#include <stdlib.h>\n\n"
        + "".join(f"static int f{i}(int x) {{\n    return x * {i};\n}}\n\n" for i in range(40))
        + 'int main(void) {\n    printf("%d\\n", f1(2));\n    return 0;\n}\n'
    )
    csv = "id,name,price,quantity\n" + "".join(
        f"{i},item{i},{i * 1.5:.2f},{i * 3}\n" for i in range(120)
    )
    shell = "#!/bin/bash\nset -euo pipefail\n\n" + "".join(
        f'if [ -f "/tmp/file{i}" ]; then\n    echo "found {i}"\n    rm -f "/tmp/file{i}"\nfi\n'
        for i in range(30)
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(5):
            archive.writestr(f"doc{i}.txt", f"document {i}\n" * 50)
    from PIL import Image

    png = io.BytesIO()
    Image.fromarray(np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3)).save(png, "PNG")
    return {
        "a.py": ("python", python.encode()),
        "b.json": ("json", json.dumps(records, indent=2).encode()),
        "c.html": ("html", html.encode()),
        "d.c": ("c", c.encode()),
        "e.csv": ("csv", csv.encode()),
        "f.sh": ("shell", shell.encode()),
        "g.zip": ("zip", buffer.getvalue()),
        "h.png": ("png", png.getvalue()),
        "i.gz": ("gzip", gzip.compress(python.encode(), mtime=0)),
    }


def _publish_dataset(ws: Workspace, root: Path, labels: list[str], space: list[str]) -> None:
    samples = _samples()
    (root / "data").mkdir(parents=True)
    for n, (name, (_, data)) in enumerate(sorted(samples.items())):
        np.save(root / "data" / f"{n:02d}-{name}.npy", np.frombuffer(data, dtype=np.uint8))
    np.save(root / "labels.npy", np.array([space.index(t) for t in labels], dtype=np.int64))
    files = [
        {"path": p.relative_to(root).as_posix(), "sha256": sha(p.read_bytes())}
        for p in sorted([*(root / "data").glob("*.npy"), root / "labels.npy"])
    ]
    manifest = {
        "kind": "dataset",
        "name": "file-types",
        "version": "1.0.0",
        "samples": len(samples),
        "data": {"format": "npy-files", "path": "data"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": len(space)},
        "files": files,
    }
    publish(ws, parse_manifest(manifest), manifest_dir=root, publisher="test")


def test_magikas_model_runs_from_its_wheel_scored_as_magikas_own_labels(
    ws: Workspace, tmp_path: Path, catalog_dir: Path
) -> None:
    from magika import Magika, __version__

    assert __version__ == "1.0.3"
    onnx, config = package_file("magika", MODEL), package_file("magika", CONFIG)
    space: list[str] = json.loads(config.read_text())["target_labels_space"]
    framework = catalog_dir / "framework-onnxruntime.yaml"
    publish(ws, load_manifest(framework), manifest_dir=catalog_dir, publisher="test")
    samples = _samples()
    labels = [kind for _, (kind, _) in sorted(samples.items())]
    _publish_dataset(ws, tmp_path / "data", labels, space)
    files = write_files(
        tmp_path / "model",
        {
            "model.onnx": onnx.read_bytes(),
            "config.min.json": config.read_bytes(),
            "magika_code.py": CODE.encode(),
        },
    )
    data: dict[str, Any] = {
        **model_manifest("security/magika-standard", "3.3.0", files, framework_range="^1"),
        "license": "Apache-2.0",
        "inputs": [{"name": "bytes", "element_type": "int32", "shape": [2048]}],
        "outputs": [{"name": "content_type", "type": "classification"}],
        "preprocess": {"file": "magika_code.py", "function": "features"},
        "postprocess": {"file": "magika_code.py", "function": "scores"},
    }
    publish(ws, parse_manifest(data), manifest_dir=tmp_path / "model", publisher="test")
    request = {
        "model": "security/magika-standard@3.3.0",
        "dataset": "file-types@1",
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
