"""magika's file-type classifier (``standard_v3_3/model.onnx``) from the PyPI package ``magika``
1.0.3, taken out of the pinned wheel as data with its ``config.min.json`` (their bytes
unmodified; nothing of the package installed), and processing code pinned beside them: the
manifest's ``preprocess`` computes magika's features from each sample's bytes (the first and
last 1024 bytes, whitespace stripped, padded with token 256, as
``Magika._extract_features_from_seekable`` does) reading the model's own configuration, and
``postprocess`` hands the model's ``target_label`` scores on as the declared
``content_type``. A run needs ``--allow-code``.

The dataset (``file-types``) is nine files of known types made here (Python, JSON, HTML, C,
CSV, shell, zip, PNG, gzip), each a 1-D uint8 ``.npy`` of its bytes, labelled by index in the
model's own ``target_labels_space``. ``tests/test_processing_magika.py`` checks a run's classes
and scores against ``Magika().identify_path``.

Licence: magika is Apache-2.0; the files are made by this module (CC0).
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import zipfile
from pathlib import Path

from pinbench.catalog.files import SUPPORTED, dataset_manifest, dump, entry, wheel_model
from pinbench.catalog.photos import nested_entry

NAME = "security/magika-standard"
DATASET = "file-types"
VERSION = "1.0.0"
PACKAGE = "magika"
MEMBER = "magika/models/standard_v3_3/model.onnx"
CONFIG = "magika/models/standard_v3_3/config.min.json"
CODE = '''\
import json

import numpy as np


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


def samples() -> dict[str, tuple[str, bytes]]:
    """Files of known types, each past magika's few-bytes path: name -> (type, bytes)."""
    import numpy as np
    from PIL import Image

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
            info = zipfile.ZipInfo(f"doc{i}.txt", date_time=(2020, 1, 1, 0, 0, 0))
            archive.writestr(info, f"document {i}\n" * 50)
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


def label_space() -> list[str]:
    """The model's ``target_labels_space``, from the wheel's ``config.min.json``."""
    from pinbench.catalog.wheels import fetch

    space: list[str] = json.loads(fetch(PACKAGE, CONFIG).read_text())["target_labels_space"]
    return space


def write_datasets(root: Path) -> list[Path]:
    """The files under ``root/file-types/data/`` (``NN-NAME.npy``), their labels and their
    dataset manifest."""
    import numpy as np

    base = root / DATASET
    if base.exists():
        shutil.rmtree(base)
    (base / "data").mkdir(parents=True)
    space = label_space()
    made = sorted(samples().items())
    files = []
    for n, (name, (_, data)) in enumerate(made):
        path = base / "data" / f"{n:02d}-{name}.npy"
        np.save(path, np.frombuffer(data, dtype=np.uint8), allow_pickle=False)
        files.append(nested_entry(root, base, path))
    labels = np.array([space.index(kind) for _, (kind, _) in made], dtype=np.int64)
    np.save(base / "labels.npy", labels, allow_pickle=False)
    files.append(nested_entry(root, base, base / "labels.npy"))
    manifest = dataset_manifest(
        root,
        DATASET,
        version=VERSION,
        description=f"{len(made)} files of known types made here, each its bytes as .npy",
        license="CC0-1.0",
        samples=len(made),
        data={"format": "npy-files", "path": "data"},
        labels={"format": "class-index-npy", "path": "labels.npy", "classes": len(space)},
        files=files,
    )
    return [manifest]


def export(root: Path) -> list[Path]:
    """The wheel's model and configuration under ``root/magika/`` with the processing code,
    and the manifest ``root/model-magika.yaml``."""
    from pinbench.catalog.wheels import copy_member

    folder = root / "magika"
    for member in (MEMBER, CONFIG):
        copy_member(PACKAGE, member, folder)
    (folder / "magika_code.py").write_text(CODE)
    names = ("model.onnx", "config.min.json", "magika_code.py")
    what = "magika's file-type classifier (standard_v3_3), its features computed by pinned code,"
    document = wheel_model(NAME, VERSION, what=what, package=PACKAGE, license="Apache-2.0") | {
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
        "files": [entry(root, folder / n) for n in names],
        "inputs": [{"name": "bytes", "element_type": "int32", "shape": [2048]}],
        "outputs": [{"name": "content_type", "type": "classification"}],
        "preprocess": {"file": "magika_code.py", "function": "features"},
        "postprocess": {"file": "magika_code.py", "function": "scores"},
    }
    return [dump(root / "model-magika.yaml", document)]
