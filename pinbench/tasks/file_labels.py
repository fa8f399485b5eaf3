"""A task whose ground truth is one file beside a data folder of sample files (voice
activity's speech spans, a speaker verification's trials, a note transcription's notes):
the labels give its ``path`` and nothing else, and the task reads it with its own reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pinbench.tasks.base import Task, TruthSource

Reader = Callable[..., Any]
"""``read(where, *, samples, folder, read)``: the truth of the file ``where``."""


class FileLabelsTask(Task):
    """``labels: {path: FILE}`` and no classes or names; ``read_truth`` reads ``FILE`` with
    ``reader`` (``labels_file`` says what it is in an error)."""

    labels_file: ClassVar[str]
    """What the file is, for a refusal (``the trial list``)."""

    @staticmethod
    def reader() -> Reader:
        raise NotImplementedError

    def check_labels(self, labels: Any, *, per_file: bool) -> None:
        super().check_labels(labels, per_file=per_file)
        kind = self.label_formats[0]
        if labels.path is None:
            raise ValueError(f"{kind} labels need `path`: {self.labels_file}")
        given = [f for f in ("classes", "names") if getattr(labels, f) is not None]
        if given:
            raise ValueError(f"{kind} labels have no classes: `{given[0]}` does not apply")

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        path = source.dataset.labels.path
        assert path is not None and source.listed is not None and source.folder is not None
        read: Callable[[str], Path] = source.paths.__getitem__
        return {
            "truth": self.reader()(path, samples=source.listed, folder=source.folder, read=read)
        }
