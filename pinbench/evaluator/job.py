"""What one evaluation is given and what it gathers (``Job``, ``Evidence``), and which pinned
files play which role: shared by the evaluation itself (``measure``, ``operate``,
``trainrun``) and the runners that carry it to a process, a venv, a container or an agent,
without importing the evaluation (NumPy is imported for types only)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.energy.meter import SYSFS
from pinbench.errors import UserError
from pinbench.evaluator.stop import Stop
from pinbench.registry.lockfile import LockedArtifact, LockedFile, Lockfile
from pinbench.registry.names import Kind

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pinbench.evaluator.predictors.config import ModelFiles

Say = Callable[[str], None]


@dataclass
class Job:
    """What one evaluation reads: the lockfile and where its verified files are."""

    lock: Lockfile
    model_paths: dict[str, Path]
    data_paths: dict[str, Path]
    scratch: Path
    """A writable folder for LoadGen's logs."""
    cache: Path | None = None
    """Where preprocessed inputs are cached, or None for no cache."""
    trace: str = "none"
    """The trace level (``pinbench.trace.levels``)."""
    allow_pickle: bool = False
    """The run's own decision to unpickle a ``trusted`` model (never the lockfile's alone)."""
    allow_code: bool = False
    """The run's own decision to run the model's ``preprocess``/``postprocess`` code
    (``pinbench.processing.consent``)."""
    stop: Stop = field(default_factory=Stop)
    """Asked to stop early (a signal, a cancel, a time limit): checked between phases, and
    LoadGen's queries are answered without the model once it is set."""
    validation_paths: dict[str, Path] = field(default_factory=dict)
    """A training run's validation split's files."""
    stage_paths: dict[str, dict[str, Path]] = field(default_factory=dict)
    """A chain's stages' files by stage name (``pinbench.chains``), each as ``model_paths``."""
    sysfs: Path = SYSFS
    """Where sysfs is mounted, for the RAPL energy counters (tests lay out their own)."""


@dataclass
class Evidence:
    """What an evaluation has gathered so far; a failed one keeps what it had."""

    frameworks: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    latencies: npt.NDArray[np.int64] | None = None
    outputs: npt.NDArray[np.generic] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    """Provenance of the environment that ran it: ``runner``, ``digest`` (image ID for docker,
    environment digest for venv, digest of the installed distributions for local) and facts."""
    trace: bytes | None = None
    """The Chrome trace (JSON) of a traced run."""
    weights: bytes | None = None
    """A training run's final weights (the file's bytes), stored as a blob."""
    graph: bytes | None = None
    """A graph-optimization run's optimized ONNX graph (onnxruntime's
    ``optimized_model_filepath``), stored as a blob (decision 180)."""
    tokens: npt.NDArray[np.int64] | None = None
    """A text-generation run's raw token times, one row per query beside ``latencies``: its
    time to first token (ns) and its answer's length in tokens."""
    postprocess: npt.NDArray[np.int64] | None = None
    """The raw times (ns) of a model's ``postprocess`` code, one per sample answered
    (``pinbench.processing.post``), stored as a blob."""


def model_files(job: Job) -> ModelFiles:
    """The lockfile's model as a predictor or generator opens it: its verified files, format,
    signature and whether it may be unpickled (the manifest's ``trusted`` and the run's own
    decision, both). A model with ``postprocess`` code declares the code's outputs: the
    predictor gives every output of the model by its own name, for the code."""
    from pinbench.evaluator.predictors.config import ModelFiles

    model = job.lock.body.model
    assert model is not None  # an evaluation of a model
    return ModelFiles(
        job.model_paths,
        model.format,
        model.architecture,
        model.trusted and job.allow_pickle,
        tuple(model.inputs),
        () if model.postprocess is not None else tuple(model.outputs),  # its code reads them all
    )


def files_of(lock: Lockfile, kind: Kind) -> LockedArtifact:
    artifact = lock.artifact(kind)
    if artifact is None:
        raise UserError(f"the lockfile pins no {kind.value}")
    return artifact


ROLES = ("model", "dataset", "validation")
"""What a pinned file is for: the model, the dataset (trained on, in a training run) and a
training run's validation split."""


def pinned_files(lock: Lockfile, role: Kind | str) -> list[LockedFile]:
    """The files of the artifact in ``role`` (a kind names its role); none for a role the
    lockfile has not (an operator benchmark pins no model or dataset)."""
    role = role.value if isinstance(role, Kind) else role
    body = lock.body
    locked = {"model": body.model, "dataset": body.dataset, "validation": body.validation}[role]
    if locked is None:
        return []
    kind = Kind.MODEL if role == "model" else Kind.DATASET
    for art in body.artifacts:
        if art.kind == kind.value and art.name == locked.name:
            return art.files
    raise UserError(f"the lockfile pins no {kind.value} {locked.name}")
