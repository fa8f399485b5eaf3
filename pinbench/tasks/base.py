"""What a task is: the one shape every folder under ``pinbench/tasks/`` has (decision 124).

A dataset's ``task:`` names one. The task owns everything that depends on what the samples
*mean*: the label formats it reads (and checks at publish), its ground truth, which of the
model's declared outputs it scores and what their shapes must be (checked on the first answer,
before anything is timed), the post-processing of those outputs, its metrics (their labels,
units, which a rerun must reproduce exactly), what lists show for it, and what ``runs parity``
compares. The evaluator, ``rerun``, reports, the CLI and the web UI ask the task
(``pinbench.tasks.registry``) and never name a task or a metric themselves.

Adding a task: a folder ``pinbench/tasks/<name>/`` whose ``task.py`` defines a ``Task``
subclass, and one line in ``registry.TASKS``. ``tests/test_task_plugin.py`` adds one from a
test module to show the whole of it. A built-in task's metrics and datasets are data in its
folder's ``declared`` module, named in ``metrics.DECLARED`` and ``datasets.DECLARED``, so that
naming them or checking a dataset imports no task.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric as Metric  # its home; tasks import it from here too

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pinbench.registry.dataset_manifest import DatasetManifest, LabelFormat
    from pinbench.registry.lockfile import LockedDataset, LockedModel
    from pinbench.tasks.parity import Agreement, Recorded
    from pinbench.worker.samples import Samples

# Aliases spelled as strings: asking for a task (``registry.task``, as a lockfile's dataset
# does) imports no NumPy; the modules that score import it themselves.
Array: TypeAlias = "npt.NDArray[np.generic]"
Answer: TypeAlias = "dict[str, Array]"
"""One ``predict`` call's outputs, by name, each with the batch's samples on axis 0."""


@dataclass(frozen=True, slots=True)
class TruthSource:
    """Where a task reads its ground truth from (``datasets.load_samples`` fills it at a run,
    ``tasks.dataset_files`` at publish)."""

    dataset: LockedDataset | DatasetManifest
    ref: str
    """``name@version``, for messages."""
    listed: list[str] | None
    """A per-file dataset's sample files (their paths in the artifact), in sample order."""
    count: int
    """How many samples the dataset holds."""
    folder: str | None
    """A per-file dataset's folder (``data.path``)."""
    paths: Mapping[str, Path]
    """Every verified file of the dataset, by its path in the artifact."""
    sizes: list[tuple[int, int]] | None = None
    """At publish, an image dataset's sample sizes (width, height) from their headers."""


@dataclass(frozen=True, slots=True)
class Context:
    """What a scorer is prepared from, before anything is timed."""

    model: LockedModel
    model_ref: str
    model_paths: dict[str, Path]
    dataset: LockedDataset
    samples: Samples
    accuracy: bool
    """An accuracy run: the scorer will be asked to ``score``."""
    sample_count: int | None
    """The scenario's ``sample_count`` (None: every sample)."""


@dataclass
class Scored:
    """What a scorer gives for a run: its metrics and what is kept of the outputs."""

    metrics: dict[str, float]
    outputs: Array | None = None
    """The array recorded as the run's outputs (for parity and ``runs outputs``)."""
    outputs_name: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    """Task details recorded with the run (per-sample rows, per-class figures)."""


class Scorer(ABC):
    """One run's view of its task: checks the first answer, then scores every answer."""

    outputs: list[str]
    """The model outputs (``predict`` keys) the scorer reads (set by each scorer)."""

    @abstractmethod
    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """Refuse a first answer whose outputs cannot be what the task scores (raise a
        ``UserError`` naming the output and its shape); ``arrays`` are the model's inputs for
        the same samples, ``batch`` how many samples the call had."""

    @abstractmethod
    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        """Score every sample's outputs (by sample index) against the ground truth."""

    def rows(self) -> int | None:
        """How many rows the model is fed, where the task makes several of one sample
        (question answering's features: answers and inputs are then by row); None: one row
        per sample."""
        return None


class Task(ABC):
    """A kind of model: see the module's docstring."""

    name: ClassVar[str]
    """The dataset's ``task:`` value."""
    title: ClassVar[str]
    label_formats: ClassVar[tuple[str, ...]] = ()
    """The label formats (``labels.format``) this task reads; each belongs to one task."""
    publishable: ClassVar[bool] = True
    """Datasets of this task can be published (``other`` is read, never published)."""
    metrics: ClassVar[tuple[Metric, ...]] = ()
    generates: ClassVar[bool] = False
    """Answered by generating token by token (``pinbench.worker.generation``), not by one
    prediction per sample: a request for it needs a ``generation`` section, scored with
    ``score_answers``."""
    scores_inputs: ClassVar[bool] = False
    """Its scorer reads the model's inputs beside the outputs (``Scorer.score``'s ``arrays``:
    an attention mask to pool by, a frame count): the evaluator hands them to the host with the
    answers of an accuracy run. Other tasks' scorers are given none."""
    by_file_name: ClassVar[tuple[str, ...]] = ()
    """Label formats that give each sample file its label by the file's name: they need a
    folder of sample files."""
    datasets: ClassVar[Datasets | None] = None
    """A built-in task's datasets as data (its ``declared`` module's ``DATASETS``, whence it
    takes ``label_formats``, ``by_file_name``, ``generates`` and ``publishable``): what checks
    a dataset's labels without importing the task (``tasks.datasets``)."""

    def check_labels(self, labels: LabelFormat, *, per_file: bool) -> None:
        """Refuse (``ValueError``) a dataset manifest's labels section this task cannot read;
        ``per_file``: the samples are a folder of files. Called whenever a manifest is read.
        By default, as ``datasets`` says (or, without it, only ``by_file_name``)."""
        rules = self.datasets or Datasets(self.label_formats, by_file_name=self.by_file_name)
        rules.check(labels, per_file=per_file)

    @abstractmethod
    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        """The dataset's ground truth as ``Samples`` fields (``labels``, ``class_names``,
        ``classes``, ``truth``, ...), read and checked; raise ``LabelProblem`` for bad files."""

    def check_truth(self, source: TruthSource) -> None:
        """At publish: refuse ground truth that cannot be scored (``LabelProblem``), reading
        no more than it must; by default, as a run reads it."""
        self.read_truth(source)

    @abstractmethod
    def prepare(self, context: Context) -> Scorer | None:
        """The run's scorer, or None where nothing is checked or scored (a performance run of
        a model with no output this task reads); refuse (``UserError``) a model whose declared
        outputs this task cannot score in an accuracy run."""

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """What ``runs parity`` shows for two accuracy runs of this task on the same dataset
        (``pinbench.tasks.parity``): figures comparing what the task scores, and whether they
        agree by the task's rule; refuse (``parity.Incomparable``) records that cannot be
        compared. By default the raw recorded outputs, element by element (max absolute and
        relative difference); a task that scores something derived from them (classes, boxes,
        strings) compares that instead."""
        from pinbench.tasks.parity import raw_parity

        return raw_parity(reference, other)

    def score_answers(self, answers: list[str], references: list[str]) -> Scored:
        """A generating task's metrics of its answer texts, each against its reference (by the
        host: ``evaluator.scoring.score_texts``), and the details that say how they were
        computed."""
        raise NotImplementedError(f"task {self.name} does not generate")

    def metric(self, key: str) -> Metric | None:
        return next((m for m in self.metrics if m.matches(key)), None)

    def headline(self, metrics: dict[str, Any]) -> tuple[Metric, float] | None:
        """The metric lists show for a run of this task, if it recorded one."""
        for m in self.metrics:
            if m.headline and isinstance(metrics.get(m.name), int | float):
                return m, float(metrics[m.name])
        return None
