"""Datasets from a verified lockfile's dataset files: where the samples are and their labels.

An array dataset (``data.format: npy``) is read here, whole (never unpickled). A per-file
dataset (``images``, ``npy-files``) is listed here and read by the pipeline
(``pinbench.evaluator.pipeline.preprocess_files``), which decodes each file as a step, so a
cached preprocessing never reads them at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.evaluator.lines import LabelProblem, read_lines
from pinbench.registry.dataset_layout import LayoutError, sample_paths
from pinbench.registry.lockfile import LockedArtifact, LockedDataset

if TYPE_CHECKING:
    from pinbench.evaluator.questions import Question
    from pinbench.tasks.detection.truth import GroundTruth
    from pinbench.tasks.segmentation.truth import MaskTruth
    from pinbench.tasks.similarity.pairs import Pairs


class DatasetError(UserError):
    def __init__(self, *, dataset: str, reason: str) -> None:
        super().__init__(f"dataset {dataset}: {reason}")
        self.dataset = dataset
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SampleFile:
    path: str
    """The file's path in the dataset artifact (what messages and results name)."""
    local: Path
    """Its verified bytes here."""


@dataclass(frozen=True, slots=True)
class Samples:
    data: npt.NDArray[np.generic] | None
    """An array dataset's samples, ``(N, ...)``."""
    files: list[SampleFile] | None
    """A per-file dataset's samples, in order."""
    format: str
    """``data.format``: ``npy``, ``images``, ``npy-files`` or ``text-lines``."""
    labels: npt.NDArray[np.int64] | None = None
    """A classification dataset's class index per sample."""
    class_names: list[str] | None = None
    """Class names by index, where the dataset gives them."""
    texts: list[str] | None = None
    """A text dataset's samples, in order."""
    pairs: Pairs | None = None
    """A sentence-similarity dataset's pairs with their gold scores."""
    classes: int | None = None
    """How many classes the dataset declares (``labels.classes``, or its names file's
    length); None when it does not say (imagefolder folders name only the classes present)."""
    detection: GroundTruth | None = None
    """A detection dataset's COCO ground truth, matched to the sample files."""
    segmentation: MaskTruth | None = None
    """A segmentation dataset's masks, one per sample file."""
    truth: Any = None
    """Another task's ground truth, as its ``read_truth`` gives it."""
    questions: list[Question] | None = None
    """A question-answering dataset's questions, each with its context (``questions-jsonl``):
    each becomes one or more features, the rows the model is fed."""

    @property
    def has_truth(self) -> bool:
        """Whether the dataset gives any ground truth to score against."""
        found = (self.labels, self.pairs, self.detection, self.segmentation, self.truth)
        return any(t is not None for t in found)

    def __len__(self) -> int:
        if self.files is not None:
            return len(self.files)
        if self.texts is not None:
            return len(self.texts)
        if self.questions is not None:
            return len(self.questions)
        assert self.data is not None
        return int(self.data.shape[0])


def load_samples(
    dataset: LockedDataset, artifact: LockedArtifact, paths: dict[str, Path], *, truth: bool = True
) -> Samples:
    """The dataset's samples (an array read, or the files listed) and its labels; without
    them for ``truth=False`` (an evaluator the ground truth is withheld from: ``paths`` then
    lacks its files, ``job.truth_paths``)."""
    ref = f"{dataset.name}@{dataset.version}"
    data = dataset.data
    if data is None:
        raise DatasetError(dataset=ref, reason="its manifest names no sample file (`data`)")
    extra = {p for p in (dataset.labels.path, dataset.labels.names) if p is not None}
    array, files, texts, questions = None, None, None, None
    if data.format == "text-lines":
        try:
            texts = read_text_lines(paths[data.path], where=data.path)
        except LabelProblem as exc:
            raise DatasetError(dataset=ref, reason=str(exc)) from None
        count, listed = len(texts), None
    elif data.format == "prompts-jsonl":
        from pinbench.evaluator.prompts import read_prompts

        try:
            texts = [p.prompt for p in read_prompts(paths[data.path], where=data.path)]
        except LabelProblem as exc:
            raise DatasetError(dataset=ref, reason=str(exc)) from None
        count, listed = len(texts), None
    elif data.format == "questions-jsonl":
        from pinbench.evaluator.questions import read_questions

        try:
            questions = read_questions(paths[data.path], where=data.path)
        except LabelProblem as exc:
            raise DatasetError(dataset=ref, reason=str(exc)) from None
        count, listed = len(questions), None
    elif data.format == "npy":
        array = _npy(ref, data.path, paths[data.path])
        count = int(array.shape[0]) if array.ndim else 0
        listed = None
    else:
        try:
            listed = sample_paths(data.format, data.path, sorted(paths), extra=extra)
        except LayoutError as exc:
            raise DatasetError(dataset=ref, reason=str(exc)) from None
        files = [SampleFile(p, paths[p]) for p in listed]
        count = len(files)
    if dataset.samples is not None and dataset.samples != count:
        raise DatasetError(
            dataset=ref, reason=f"its manifest declares {dataset.samples} samples, it holds {count}"
        )
    if not truth:
        return Samples(array, files, data.format, texts=texts, questions=questions)
    from pinbench.tasks.base import TruthSource
    from pinbench.tasks.registry import task

    source = TruthSource(
        dataset, ref, listed, count, data.path if listed is not None else None, paths
    )
    try:
        found = task(dataset.task).read_truth(source)
    except LabelProblem as exc:
        raise DatasetError(dataset=ref, reason=str(exc)) from None
    return Samples(array, files, data.format, texts=texts, questions=questions, **found)


def read_text_lines(path: Path, *, where: str) -> list[str]:
    """A ``text-lines`` file's samples: one per line as ``lines.read_lines`` splits them (LF
    only, a CR before it dropped; UTF-8; at most 64 MiB, a line at most 1 MiB); a blank line
    is refused (a sample of nothing is almost always a mistake)."""
    lines = read_lines(path, where)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise LabelProblem(path=where, reason=f"line {number} is blank (one text per line)")
    return lines


def _npy(ref: str, name: str, path: Path) -> npt.NDArray[np.generic]:
    try:
        array: npt.NDArray[np.generic] = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise DatasetError(dataset=ref, reason=f"cannot read {name}: {exc}") from None
    return array
