"""The digits part of the built-in catalog: scikit-learn's bundled digits (no download), its
test split as a dataset, and a logistic-regression classifier in four versions (the registry's
story: ranges, a yank, a prerelease) written straight to ONNX.

Training is deterministic (fixed split, lbfgs, fixed seed; run in the pinned numeric
environment of ``numerics``, the same on every x86-64 machine with AVX2); the ONNX bytes are
written with a fixed producer, IR version and opset, so the same library versions give the same
digests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.catalog.files import dump, entry, model_manifest

SEED = 0
TEST_SIZE = 0.25
OPSET = 17
IR_VERSION = 8
MODEL_NAME = "vision/digits-logreg"
DATASET_NAME = "sklearn-digits-test"
DIGITS_STEPS: list[dict[str, Any]] = [
    {"normalize": {"mean": [0.0], "std": [16.0]}},
    {"layout": {"to": "NCHW"}},
]


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


TRAIN_DIR = "digits-train"
SPLIT_FILES = ("images.npy", "labels.npy")


def save_train(root: Path, x_train: npt.NDArray[Any], y_train: npt.NDArray[Any]) -> list[Path]:
    """The train split as ``root/digits-train/{images,labels}.npy`` (the train stage's input)."""
    folder = root / TRAIN_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in zip(SPLIT_FILES, (x_train, y_train), strict=True):
        np.save(folder / name, array, allow_pickle=False)
    return [folder / name for name in SPLIT_FILES]


def load_train(root: Path) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """What ``save_train`` wrote (a missing file raises OSError)."""
    x, y = (np.load(root / TRAIN_DIR / name, allow_pickle=False) for name in SPLIT_FILES)
    return x, y


TRAIN_DATASET_NAME = "sklearn-digits-train"


def write_dataset(root: Path, x_test: npt.NDArray[Any], y_test: npt.NDArray[Any]) -> Path:
    return _write_split(root, "test", DATASET_NAME, f"test split ({TEST_SIZE:.0%}", x_test, y_test)


def write_train_dataset(root: Path, x_train: npt.NDArray[Any], y_train: npt.NDArray[Any]) -> Path:
    """The train split as a dataset too (what training benchmarks train on), in the folder
    ``save_train`` writes."""
    split = f"train split ({1 - TEST_SIZE:.0%}"
    return _write_split(root, "train", TRAIN_DATASET_NAME, split, x_train, y_train)


def _write_split(
    root: Path, split: str, name: str, what: str, x: npt.NDArray[Any], y: npt.NDArray[Any]
) -> Path:
    data = root / f"digits-{split}"
    data.mkdir(exist_ok=True)
    np.save(data / "images.npy", x, allow_pickle=False)
    np.save(data / "labels.npy", y, allow_pickle=False)
    return dump(
        root / f"dataset-digits-{split}.yaml",
        {
            "kind": "dataset",
            "name": name,
            "version": "1.0.0",
            "description": f"scikit-learn digits, {what}, seed {SEED})",
            "license": "BSD-3-Clause",
            "samples": len(x),
            "data": {"format": "npy", "path": "images.npy"},
            "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": 10},
            "files": [entry(root, data / "images.npy"), entry(root, data / "labels.npy")],
        },
    )


# (version, regularisation C): 1.2.0 is published to be yanked, 2.0.0-rc.1 is a prerelease.
MODEL_VERSIONS = [("1.0.0", 0.05), ("1.1.0", 1.0), ("1.2.0", 10.0), ("2.0.0-rc.1", 0.5)]
WEIGHT_FILES = ("coef.npy", "intercept.npy")

Weights = dict[str, tuple[npt.NDArray[Any], npt.NDArray[Any]]]
"""Each version's (weights (10, 64), bias (10,))."""


def train_versions(x_train: npt.NDArray[Any], y_train: npt.NDArray[Any]) -> Weights:
    return {version: train_logreg(x_train, y_train, c) for version, c in MODEL_VERSIONS}


def save_weights(root: Path, weights: Weights) -> list[Path]:
    """Each version's weights as ``root/digits-logreg-VERSION/{coef,intercept}.npy``."""
    out = []
    for version, arrays in weights.items():
        folder = root / f"digits-logreg-{version}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in zip(WEIGHT_FILES, arrays, strict=True):
            np.save(folder / name, array, allow_pickle=False)
            out.append(folder / name)
    return out


def load_weights(root: Path) -> Weights:
    """What ``save_weights`` wrote, for every version (a missing file raises OSError)."""
    weights: Weights = {}
    for version, _ in MODEL_VERSIONS:
        folder = root / f"digits-logreg-{version}"
        coef, intercept = (np.load(folder / name, allow_pickle=False) for name in WEIGHT_FILES)
        weights[version] = (coef, intercept)
    return weights


def export_logreg(root: Path, weights: Weights) -> list[Path]:
    """Each version as ONNX under ``root/digits-logreg-VERSION/`` with its manifest."""
    models = []
    regularisation = dict(MODEL_VERSIONS)
    for version, (coef, intercept) in weights.items():
        folder = root / f"digits-logreg-{version}"
        folder.mkdir(exist_ok=True)
        write_onnx(folder / "digits-logreg.onnx", coef, intercept)
        models.append(
            model_manifest(
                root,
                f"model-digits-logreg-{version}.yaml",
                name=MODEL_NAME,
                version=version,
                description=f"logistic regression on 8x8 digits (C={regularisation[version]})",
                fmt="onnx",
                framework="onnxruntime",
                file=folder / "digits-logreg.onnx",
                input_shape=[1, 8, 8],
                steps=DIGITS_STEPS,
                attributes={"training_dataset": f"sklearn digits train split, seed {SEED}"},
            )
        )
    return models
