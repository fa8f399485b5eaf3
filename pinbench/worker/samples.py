"""A dataset's samples as a run holds them: an array, the files listed, texts or questions,
and the ground truth its task read (``worker.datasets.load_samples`` makes them). Data only:
the tasks that score them import this, not the reader."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from pinbench.tasks.detection.truth import GroundTruth
    from pinbench.tasks.segmentation.truth import MaskTruth
    from pinbench.tasks.similarity.pairs import Pairs
    from pinbench.worker.questions import Question


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
