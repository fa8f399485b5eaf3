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
from pinbench.registry.lockfile import LockedArtifact, LockedFile, Lockfile
from pinbench.registry.names import Kind
from pinbench.worker.stop import Stop

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pinbench.training.distributed.placement import RankPlacement
    from pinbench.worker.memory import PeakMemory
    from pinbench.worker.predictors.config import ModelFiles
    from pinbench.worker.remote_test import RemoteTest
    from pinbench.worker.seal import Seal

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
    seal: Seal | None = None
    """The host's key for the inputs cache it reads (``seal``); a worker has none."""
    remote: RemoteTest | None = None
    """The host times the test (``runners.host_clock``): LoadGen's queries come across this."""
    memory: PeakMemory | None = None
    """The evaluation's peak memory (``measure``): an evaluator marks where its model's loading
    begins (``PeakMemory.model_loading``)."""
    ranks: RankPlacement | None = None
    """A training run whose ranks are spread over systems: this system's share
    (``training.distributed.placement``); None: every rank here."""

    @property
    def log_dir(self) -> Path:
        """Where LoadGen writes its logs when it runs beside the model (``loadgen_files``)."""
        return self.scratch / "loadgen"


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
    answers: dict[int, dict[str, npt.NDArray[np.generic]]] | None = None
    """An accuracy run scored apart (``scored_apart``): the outputs the system under test gave
    for each sample index, by output name, each with a batch axis of one; a generating run's
    (``texts_scored_apart``): each answer's text (``answers.as_answer``). The host scores them
    (``evaluator.scoring``)."""
    scored_inputs: dict[str, npt.NDArray[np.generic]] | None = None
    """With ``answers``, for a task that reads the model's inputs as it scores (an attention
    mask, a frame count: ``Task.scores_inputs``): those inputs, every sample's."""
    logs: dict[str, bytes] | None = None
    """LoadGen's own logs of the run's test, by ``loadgen_files.LOGS``' names, read by whoever
    ran LoadGen; stored as blobs (``run_blobs.save_logs``)."""
    unscored: Any = None
    """A ``test01.Unscored``: TEST01's verdicts the host that ran the audits' workers found,
    waiting to be finished where the run is recorded, with the ground truth
    (``test01_scoring.settle``); never a worker's (typed ``Any``: the worker's side imports
    nothing of the evaluator's)."""


def model_files(job: Job) -> ModelFiles:
    """The lockfile's model as a predictor or generator opens it: its verified files, format,
    signature and whether it may be unpickled (the manifest's ``trusted`` and the run's own
    decision, both). A model with ``postprocess`` code declares the code's outputs: the
    predictor gives every output of the model by its own name, for the code."""
    from pinbench.worker.predictors.config import ModelFiles

    model = job.lock.body.model
    assert model is not None  # an evaluation of a model
    return ModelFiles(
        job.model_paths,
        model.format,
        model.architecture,
        model.trusted and job.allow_pickle,
        tuple(model.inputs),
        () if model.postprocess is not None else tuple(model.outputs),  # its code reads them all
        model.builder,
        job.allow_code,
        {f.path: f.sha256 for f in files_of(job.lock, Kind.MODEL).files},
    )


def files_of(lock: Lockfile, kind: Kind) -> LockedArtifact:
    artifact = lock.artifact(kind)
    if artifact is None:
        raise UserError(f"the lockfile pins no {kind.value}")
    return artifact


ROLES = ("model", "dataset", "validation")
"""What a pinned file is for: the model, the dataset (trained on, in a training run) and a
training run's validation split."""


def scored_apart(lock: Lockfile) -> bool:
    """Whether the host scores this lockfile's run apart from the system under test (MLPerf's
    accuracy script; issue 63): a model's or a chain's run on a dataset. Its evaluator is
    handed the dataset's files but for its ground truth (``truth_paths``) and returns its
    outputs; the host reads the truth and scores them. Training and operator runs score where
    they run; a generating run's texts are scored apart (``texts_scored_apart``)."""
    body = lock.body
    return (
        body.model is not None
        and body.dataset is not None
        and body.training is None
        and body.operator is None
        and body.request.generation is None
    )


def texts_scored_apart(lock: Lockfile) -> bool:
    """Whether the host scores this run's answer texts (issue 64): a model generating for a
    dataset (text generation, speech recognition). Its evaluator is handed the dataset but for
    its ground truth (``truth_paths``: a speech dataset's transcripts; a prompts file keeps its
    references beside the prompts, and perplexity is computed from them beside the model) and
    returns each answer's text; the host scores them against the references it reads. Its
    figures, and perplexity, are the evaluator's."""
    body = lock.body
    return (
        body.model is not None and body.dataset is not None and body.request.generation is not None
    )


def truth_paths(lock: Lockfile) -> set[str]:
    """The dataset's files that hold its ground truth and nothing the model is fed: its
    ``labels.path`` (a file, or a folder of masks) and ``labels.names``, unless the samples are
    read from the same path (the truth is then in the inputs: a text file of pairs, a sample
    file's own folder name)."""
    dataset = lock.body.dataset
    if dataset is None:
        return set()
    data = dataset.data.path if dataset.data is not None else None
    named = {p for p in (dataset.labels.path, dataset.labels.names) if p not in (None, ".", data)}
    found = set()
    for f in pinned_files(lock, "dataset", truth=True):
        if f.path in named or any(f.path.startswith(p.rstrip("/") + "/") for p in named):
            found.add(f.path)
    return found


def withheld_paths(lock: Lockfile) -> set[str]:
    """The dataset's files an evaluator (or a cluster agent) is not handed: its ground truth
    (``truth_paths``) in a run scored apart, or whose texts are; none otherwise."""
    return truth_paths(lock) if scored_apart(lock) or texts_scored_apart(lock) else set()


def truth_withheld(lock: Lockfile) -> bool:
    """Whether the evaluator runs without the dataset's ground truth: the run is scored apart
    and the truth is in files of its own (``truth_paths``). Where it is not, the evaluator reads
    it as before (a chain of stages, a run the host does not score, truth in the inputs)."""
    return bool(withheld_paths(lock))


def pinned_files(lock: Lockfile, role: Kind | str, *, truth: bool = False) -> list[LockedFile]:
    """The files of the artifact in ``role`` (a kind names its role); none for a role the
    lockfile has not (an operator benchmark pins no model or dataset). A run scored apart
    (``scored_apart``) is handed its dataset without its ground truth (``truth_paths``) unless
    ``truth`` (the host, which scores)."""
    role = role.value if isinstance(role, Kind) else role
    body = lock.body
    locked = {"model": body.model, "dataset": body.dataset, "validation": body.validation}[role]
    if locked is None:
        return []
    kind = Kind.MODEL if role == "model" else Kind.DATASET
    for art in body.artifacts:
        if art.kind == kind.value and art.name == locked.name:
            if role != "dataset" or truth:
                return art.files
            withheld = withheld_paths(lock)
            return [f for f in art.files if f.path not in withheld]
    raise UserError(f"the lockfile pins no {kind.value} {locked.name}")
