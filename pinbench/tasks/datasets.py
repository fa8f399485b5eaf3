"""What each task's datasets are, as data: the label formats it reads, which of them name sample
files, what a labels section must give and must not, whether the task is answered by
generating and whether its datasets are published; read without importing a task (issue 83,
item 7).

A stored lockfile's dataset is checked against its task whenever the lockfile is read
(``registry.checks``): listing a home's runs reads one lockfile of each kind. Each built-in
task declares its ``Datasets`` in its folder's ``declared`` module, beside its metrics, and its
``Task`` class takes them from there; ``DECLARED`` names each declaration, so that checking a
dataset of any built-in task imports no task, no scorer and no NumPy. A task added by its
``registry.TASKS`` line alone is asked (it is imported).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

LABEL_FIELDS = ("path", "classes", "names")
"""The fields of a labels section that ``Datasets.refuses`` may name."""


@dataclass(frozen=True, slots=True)
class Datasets:
    """What a task's datasets are (see the module's docstring)."""

    formats: tuple[str, ...]
    """The label formats (``labels.format``) the task reads; each belongs to one task."""
    by_file_name: tuple[str, ...] = ()
    """Label formats that give each sample file its label by the file's name: they need a
    folder of sample files."""
    needs_path: str | None = None
    """The refusal of a labels section without ``path`` (``{format}``: its format); None where
    ``path`` is optional."""
    refuses: tuple[str, ...] = ()
    """Fields of ``LABEL_FIELDS`` a labels section of this task must leave out, checked in
    this order."""
    refused: str = ""
    """The refusal of the first of ``refuses`` given (``{format}``, ``{field}``)."""
    generates: bool = False
    """Answered by generating token by token, not by one prediction per sample (``Task``)."""
    publishable: bool = True
    """Datasets of this task can be published (``other`` is read, never published)."""

    def check(self, labels: Any, *, per_file: bool) -> None:
        """Refuse (``ValueError``) a labels section of one of ``formats`` this task cannot read;
        ``per_file``: the samples are a folder of files."""
        fmt = labels.format
        if fmt in self.by_file_name and not per_file:
            from pinbench.registry.dataset_manifest import PER_FILE_FORMATS

            raise ValueError(
                f"labels of format {fmt} name sample files: the data must be a "
                f"folder of them (data.format {' or '.join(PER_FILE_FORMATS)})"
            )
        if self.needs_path is not None and labels.path is None:
            raise ValueError(self.needs_path.format(format=fmt))
        given = [f for f in self.refuses if getattr(labels, f) is not None]
        if given:
            raise ValueError(self.refused.format(format=fmt, field=given[0]))


DECLARED: dict[str, str] = {
    "classification": "pinbench.tasks.classification.declared:DATASETS",
    "sentence-similarity": "pinbench.tasks.similarity.declared:DATASETS",
    "detection": "pinbench.tasks.detection.declared:DATASETS",
    "segmentation": "pinbench.tasks.segmentation.declared:DATASETS",
    "text-recognition": "pinbench.tasks.text_recognition.declared:DATASETS",
    "voice-activity": "pinbench.tasks.vad.declared:DATASETS",
    "text-generation": "pinbench.tasks.generation.declared:DATASETS",
    "speech-recognition": "pinbench.tasks.speech.declared:DATASETS",
    "speaker-verification": "pinbench.tasks.speaker.declared:DATASETS",
    "note-transcription": "pinbench.tasks.notes.declared:DATASETS",
    "token-classification": "pinbench.tasks.tokens.declared:DATASETS",
    "question-answering": "pinbench.tasks.question_answering.declared:DATASETS",
    "audio-to-audio": "pinbench.tasks.audio_to_audio.declared:DATASETS",
    "image-to-image": "pinbench.tasks.image_to_image.declared:DATASETS",
    "other": "pinbench.tasks.classification.declared:OTHER",
}
"""Where each built-in task of ``registry.TASKS`` (in its order) declares its datasets
(``module:NAME``); a test holds that the two name the same tasks and that each task's class
agrees with its declaration."""


def declared(task_name: str) -> Datasets | None:
    """Task ``task_name``'s declaration; None for a task not built in."""
    where = DECLARED.get(task_name)
    if where is None:
        return None
    module, _, name = where.partition(":")
    found: Datasets = getattr(importlib.import_module(module), name)
    return found
