"""Training benchmarks (Deep500's level 2): one model, one framework, trained to a target.

``TrainingSpec`` (spec.py) holds the optimizer, hyperparameters, epoch cap, quality target,
seed and determinism switches; ``TrainModel``/``TrainData`` (data.py) the start model's files
and the arrays; ``frameworks/`` one module per framework (imported lazily); ``run.train``
runs the shared loop and returns a ``TrainingResult`` (per-epoch records, time to accuracy,
the final weights' bytes and digest). Design: docs/decisions.md entry 108.
"""

from pinbench.training.data import TrainData, TrainModel
from pinbench.training.errors import (
    InvalidData,
    InvalidModel,
    InvalidThreads,
    ThreadsFixed,
    TrainingDiverged,
    UnknownFramework,
)
from pinbench.training.frameworks import FRAMEWORKS
from pinbench.training.result import EpochRecord, TrainingResult
from pinbench.training.run import train
from pinbench.training.spec import TrainingSpec, parse_spec

__all__ = [
    "FRAMEWORKS",
    "EpochRecord",
    "InvalidData",
    "InvalidModel",
    "InvalidThreads",
    "ThreadsFixed",
    "TrainData",
    "TrainModel",
    "TrainingDiverged",
    "TrainingResult",
    "TrainingSpec",
    "UnknownFramework",
    "parse_spec",
    "train",
]
