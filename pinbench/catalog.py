"""The built-in catalog, real and offline: a digits classifier trained on scikit-learn's
bundled digits (no download), exported to ONNX, and the digits test split as a dataset.

Training is deterministic (fixed split, lbfgs, fixed seed); the ONNX bytes are written with a
fixed producer, IR version and opset, so the same library versions give the same digests.
Needs the ``catalog`` extra (scikit-learn, onnx).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from pinbench.artifacts.digest import hash_file

SEED = 0
TEST_SIZE = 0.25
OPSET = 17
IR_VERSION = 8
# sha256 of the CPython 3.11 manylinux x86_64 wheel of onnxruntime 1.31.0 on PyPI.
ONNXRUNTIME_VERSION = "1.31.0"
ONNXRUNTIME_WHEEL = "d4092b78fc5bab77ce6522393098cdb2535423045ecdcff15cc0d022162d6b66"
MODEL_NAME = "vision/digits-logreg"
DATASET_NAME = "sklearn-digits-test"


@dataclass(frozen=True, slots=True)
class Catalog:
    manifests: list[Path]
    """In publishing order."""


def digits_split() -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = digits.images.astype(np.uint8)  # (1797, 8, 8), values 0..16
    x_train, x_test, y_train, y_test = train_test_split(
        images,
        digits.target.astype(np.int64),
        test_size=TEST_SIZE,
        random_state=SEED,
        stratify=digits.target,
    )
    return x_train, x_test, y_train, y_test


def train_logreg(x: npt.NDArray[Any], y: npt.NDArray[Any], c: float) -> tuple[Any, Any]:
    """Multinomial logistic regression on pixels / 16; returns (weights (10, 64), bias (10,))."""
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=c, max_iter=2000, random_state=SEED)
    clf.fit(x.reshape(len(x), -1).astype(np.float64) / 16.0, y)
    return clf.coef_.astype(np.float32), clf.intercept_.astype(np.float32)


def write_onnx(path: Path, weights: npt.NDArray[Any], bias: npt.NDArray[Any]) -> None:
    """``x (N, 1, 8, 8) -> Flatten -> Gemm -> logits (N, 10)``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [
            helper.make_node("Flatten", ["x"], ["flat"], axis=1),
            helper.make_node("Gemm", ["flat", "W", "b"], ["logits"], transB=1),
        ],
        "digits_logreg",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        initializer=[numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(
        graph,
        producer_name="pinbench",
        producer_version="1",
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString(deterministic=True))


def _entry(root: Path, path: Path) -> dict[str, Any]:
    digest, size = hash_file(path)
    rel = path.relative_to(root).as_posix()
    return {"path": path.name, "sha256": digest.hex, "size": size, "source": f"file:{rel}"}


def _dump(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# (version, regularisation C): 1.2.0 is published to be yanked, 2.0.0-rc.1 is a prerelease.
MODEL_VERSIONS = [("1.0.0", 0.05), ("1.1.0", 1.0), ("1.2.0", 10.0), ("2.0.0-rc.1", 0.5)]


def build(root: Path) -> Catalog:
    """Train and write the catalog's files and manifests under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    x_train, x_test, y_train, y_test = digits_split()
    framework = _dump(
        root / "framework-onnxruntime.yaml",
        {
            "kind": "framework",
            "name": "onnxruntime",
            "version": ONNXRUNTIME_VERSION,
            "description": f"ONNX Runtime {ONNXRUNTIME_VERSION}, CPU, CPython 3.11",
            "environments": [
                {
                    "platform": {"arch": "amd64", "device": "cpu"},
                    "python": "3.11",
                    "requirements": [
                        {
                            "name": "onnxruntime",
                            "version": ONNXRUNTIME_VERSION,
                            "hashes": [f"sha256:{ONNXRUNTIME_WHEEL}"],
                        }
                    ],
                }
            ],
        },
    )
    data = root / "digits-test"
    data.mkdir(exist_ok=True)
    np.save(data / "images.npy", x_test, allow_pickle=False)
    np.save(data / "labels.npy", y_test, allow_pickle=False)
    dataset = _dump(
        root / "dataset-digits-test.yaml",
        {
            "kind": "dataset",
            "name": DATASET_NAME,
            "version": "1.0.0",
            "description": f"scikit-learn digits, test split ({TEST_SIZE:.0%}, seed {SEED})",
            "license": "BSD-3-Clause",
            "samples": len(x_test),
            "data": {"format": "npy", "path": "images.npy"},
            "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": 10},
            "files": [_entry(root, data / "images.npy"), _entry(root, data / "labels.npy")],
        },
    )
    models = []
    for version, c in MODEL_VERSIONS:
        folder = root / f"digits-logreg-{version}"
        folder.mkdir(exist_ok=True)
        weights, bias = train_logreg(x_train, y_train, c)
        write_onnx(folder / "digits-logreg.onnx", weights, bias)
        models.append(
            _dump(
                root / f"model-digits-logreg-{version}.yaml",
                {
                    "kind": "model",
                    "name": MODEL_NAME,
                    "version": version,
                    "description": f"logistic regression on 8x8 digits (C={c})",
                    "license": "BSD-3-Clause",
                    "format": "onnx",
                    "framework": {"name": "onnxruntime", "range": ">=1.17 <2"},
                    "files": [_entry(root, folder / "digits-logreg.onnx")],
                    "inputs": [
                        {
                            "name": "x",
                            "type": "image",
                            "element_type": "float32",
                            "shape": [1, 8, 8],
                            "steps": [
                                {"normalize": {"mean": [0.0], "std": [16.0]}},
                                {"layout": {"to": "NCHW"}},
                            ],
                        }
                    ],
                    "outputs": [
                        {
                            "name": "logits",
                            "type": "classification",
                            "steps": [{"softmax": {}}, {"topk": {"k": 5}}],
                        }
                    ],
                    "attributes": {"training_dataset": f"sklearn digits train split, seed {SEED}"},
                },
            )
        )
    return Catalog([framework, dataset, *models])
