"""One module per framework, each the same shape (``base.TrainingFramework``).

A framework is imported only when its module's functions run, so validating a training spec
never starts PyTorch or TensorFlow.
"""

from __future__ import annotations

from typing import Final

from pinbench.training.errors import UnknownFramework
from pinbench.training.frameworks.base import Trainer, TrainingFramework

FRAMEWORKS: Final = ("tensorflow", "torch")


def load(name: str) -> TrainingFramework:
    """The module of framework ``name`` (cheap: the framework itself is not imported)."""
    if name == "torch":
        from pinbench.training.frameworks import torch

        return torch
    if name == "tensorflow":
        from pinbench.training.frameworks import tensorflow

        return tensorflow
    raise UnknownFramework(framework=name, known=FRAMEWORKS)


__all__ = ["FRAMEWORKS", "Trainer", "TrainingFramework", "load"]
