"""Datasets from a verified lockfile's dataset files: where the samples are and their labels.

An array dataset (``data.format: npy``) is read here, whole (never unpickled). A per-file
dataset (``images``, ``npy-files``) is listed here and read by the pipeline
(``pinbench.worker.pipeline.preprocess_files``), which decodes each file as a step, so a
cached preprocessing never reads them at all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.dataset_layout import LayoutError, sample_paths
from pinbench.registry.lockfile import LockedArtifact, LockedDataset
from pinbench.worker.lines import LabelProblem, read_lines
from pinbench.worker.samples import SampleFile as SampleFile
from pinbench.worker.samples import Samples as Samples


class DatasetError(UserError):
    def __init__(self, *, dataset: str, reason: str) -> None:
        super().__init__(f"dataset {dataset}: {reason}")
        self.dataset = dataset
        self.reason = reason


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
        from pinbench.worker.prompts import read_prompts

        try:
            texts = [p.prompt for p in read_prompts(paths[data.path], where=data.path)]
        except LabelProblem as exc:
            raise DatasetError(dataset=ref, reason=str(exc)) from None
        count, listed = len(texts), None
    elif data.format == "questions-jsonl":
        from pinbench.worker.questions import read_questions

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
