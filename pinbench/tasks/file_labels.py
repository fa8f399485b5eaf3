"""A task whose ground truth is one file beside a data folder of sample files (voice
activity's speech spans, a speaker verification's trials, a note transcription's notes):
the labels give its ``path`` and nothing else, and the task reads it with its own reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinbench.tasks.base import Task, TruthSource

Reader = Callable[..., Any]
"""``read(where, *, samples, folder, read)``: the truth of the file ``where``."""


class FileLabelsTask(Task):
    """``labels: {path: FILE}`` and no classes or names (each task's ``DATASETS``);
    ``read_truth`` reads ``FILE`` with ``reader``."""

    @staticmethod
    def reader() -> Reader:
        raise NotImplementedError

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        path = source.dataset.labels.path
        assert path is not None and source.listed is not None and source.folder is not None
        read: Callable[[str], Path] = source.paths.__getitem__
        return {
            "truth": self.reader()(path, samples=source.listed, folder=source.folder, read=read)
        }
