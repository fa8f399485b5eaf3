"""The built-in catalog, real and offline (needs the ``catalog`` extra; the CNN part needs the
``torch`` and ``tensorflow`` extras too):

- ``digits``: scikit-learn's bundled digits test split as a dataset, a logistic-regression
  classifier in four versions (ONNX), and the ONNX Runtime framework artifact;
- ``cnn``: one small CNN trained in PyTorch, in three framework artifacts (ONNX, safetensors,
  Keras) with the torch and tensorflow framework artifacts;
- ``resnet50``: ResNet-50 with seeded random weights (performance only) in ONNX and
  safetensors, with a synthetic 224x224 input dataset.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pinbench.catalog import frameworks
from pinbench.catalog.digits import (
    DATASET_NAME,
    MODEL_NAME,
    digits_split,
    train_logreg,
    write_dataset,
    write_logreg,
)
from pinbench.catalog.frameworks import VERSIONS

PARTS = ("digits", "cnn", "resnet50")
ONNXRUNTIME_VERSION = VERSIONS["onnxruntime"]

__all__ = [
    "DATASET_NAME",
    "MODEL_NAME",
    "ONNXRUNTIME_VERSION",
    "PARTS",
    "Catalog",
    "build",
    "digits_split",
    "train_logreg",
]


@dataclass(frozen=True, slots=True)
class Catalog:
    manifests: list[Path]
    """In publishing order."""


def build(root: Path, parts: Iterable[str] = ("digits",)) -> Catalog:
    """Train and write the chosen parts' files and manifests under ``root``."""
    chosen = set(parts)
    unknown = chosen - set(PARTS)
    if unknown:
        raise ValueError(f"unknown catalog parts {sorted(unknown)}; parts: {', '.join(PARTS)}")
    root.mkdir(parents=True, exist_ok=True)
    x_train, x_test, y_train, y_test = digits_split()
    out = [frameworks.write(root, "onnxruntime"), write_dataset(root, x_test, y_test)]
    if "digits" in chosen:
        out += write_logreg(root, x_train, y_train)
    if "cnn" in chosen:
        from pinbench.catalog import cnn

        out += [frameworks.write(root, "torch"), frameworks.write(root, "tensorflow")]
        out += cnn.write(root, x_train, y_train)
    if "resnet50" in chosen:
        from pinbench.catalog import resnet

        if "cnn" not in chosen:
            out.append(frameworks.write(root, "torch"))
        out += resnet.write(root)
    return Catalog(out)
