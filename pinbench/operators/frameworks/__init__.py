"""One module per framework, each the same shape (``base.OperatorFramework``).

A framework is imported only when its module's functions run, so listing or validating
operators never starts PyTorch or TensorFlow.
"""

from __future__ import annotations

from typing import Final

from pinbench.operators.frameworks.base import OperatorFramework
from pinbench.specs.operators.errors import UnknownFramework

FRAMEWORKS: Final = ("onnxruntime", "tensorflow", "torch")


def load(name: str) -> OperatorFramework:
    """The module of framework ``name`` (cheap: the framework itself is not imported)."""
    if name == "torch":
        from pinbench.operators.frameworks import torch

        return torch
    if name == "tensorflow":
        from pinbench.operators.frameworks import tensorflow

        return tensorflow
    if name == "onnxruntime":
        from pinbench.operators.frameworks import onnxruntime

        return onnxruntime
    raise UnknownFramework(framework=name, known=FRAMEWORKS)


__all__ = ["FRAMEWORKS", "OperatorFramework", "load"]
