"""The tasks pinbench knows, by the name a dataset's ``task:`` gives (decision 124).

Each entry is ``module:Class``, imported only when the task is asked for, so asking for one
task never imports another's dependencies. Adding a task is its folder and one line here.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from pinbench.errors import UserError
from pinbench.tasks.base import Metric, Task

TASKS: dict[str, str] = {
    "classification": "pinbench.tasks.classification.task:Classification",
    "sentence-similarity": "pinbench.tasks.similarity.task:SentenceSimilarity",
    "detection": "pinbench.tasks.detection.task:Detection",
    "segmentation": "pinbench.tasks.segmentation.task:Segmentation",
    "text-recognition": "pinbench.tasks.text_recognition.task:TextRecognition",
    "voice-activity": "pinbench.tasks.vad.task:VoiceActivity",
    "text-generation": "pinbench.tasks.generation.task:TextGeneration",
    "speech-recognition": "pinbench.tasks.speech.task:SpeechRecognition",
    "speaker-verification": "pinbench.tasks.speaker.task:SpeakerVerification",
    "note-transcription": "pinbench.tasks.notes.task:NoteTranscription",
    "token-classification": "pinbench.tasks.tokens.task:TokenClassification",
    "question-answering": "pinbench.tasks.question_answering.task:QuestionAnswering",
    "other": "pinbench.tasks.classification.task:Other",
}


class UnknownTask(UserError):
    def __init__(self, *, name: str, known: list[str]) -> None:
        shown = name if len(name) <= 64 else f"{name[:64]}... ({len(name)} characters)"
        super().__init__(f"unknown task {shown!r}; known: {', '.join(known)}")
        self.name = name
        self.known = known


def names() -> list[str]:
    return list(TASKS)


@cache
def task(name: str) -> Task:
    """The task named ``name`` (``UnknownTask`` if there is none)."""
    where = TASKS.get(name)
    if where is None:
        raise UnknownTask(name=name, known=names())
    module, _, cls = where.partition(":")
    made: Task = getattr(importlib.import_module(module), cls)()
    return made


def tasks() -> list[Task]:
    return [task(n) for n in TASKS]


def check_dataset(task_name: str, labels: Any, *, per_file: bool) -> None:
    """A dataset's task is one pinbench knows and reads its labels section (``ValueError``
    otherwise): checked wherever a dataset manifest or a lockfile's dataset is read."""
    try:
        chosen = task(task_name)
    except UnknownTask as exc:
        raise ValueError(str(exc)) from None
    fmt = labels.format
    if fmt not in chosen.label_formats:
        owners = task_of_label_format(fmt)
        if not owners:
            known = sorted({f for t in tasks() for f in t.label_formats})
            raise ValueError(
                f"unknown labels format: `labels.format` must be one of {', '.join(known)}; got "
                f"{fmt!r} (task {task_name} reads {', '.join(chosen.label_formats)})"
            )
        raise ValueError(
            f"labels of format {fmt} go with task {' or '.join(owners)}; task {task_name} "
            f"reads labels of format {', '.join(chosen.label_formats)}"
        )
    chosen.check_labels(labels, per_file=per_file)


def task_of_label_format(fmt: str) -> list[str]:
    """The tasks that read labels of format ``fmt``."""
    return [t.name for t in tasks() if fmt in t.label_formats]


def metric_of(key: str, task_name: str | None = None) -> Metric | None:
    """What a recorded metric ``key`` is: looked up in the run's task first (when known),
    then in every task; None for a metric no task declares (latency, energy, training)."""
    order = [task(task_name)] if task_name in TASKS else []
    for t in [*order, *tasks()]:
        found = t.metric(key)
        if found is not None:
            return found
    return None


def exact_metrics(metrics: dict[str, Any], task_name: str | None = None) -> list[str]:
    """The recorded metrics a rerun must give again exactly, in a stable order (the run's
    task's declared order first)."""
    found = [k for k in metrics if (m := metric_of(k, task_name)) is not None and m.exact]
    rank = {m.name: i for i, m in enumerate(_all_metrics(task_name))}
    return sorted(found, key=lambda k: (rank.get(_base(k, task_name), len(rank)), k))


def headline(
    metrics: dict[str, Any], task_name: str | None = None
) -> tuple[Task, Metric, float] | None:
    """What lists show for a run: its task's headline metric, if recorded; with no task
    known, the first task whose headline metric the run recorded."""
    order = [task(task_name)] if task_name in TASKS else tasks()
    for t in order:
        found = t.headline(metrics)
        if found is not None:
            return t, *found
    return None


def _all_metrics(task_name: str | None) -> list[Metric]:
    first = [task(task_name)] if task_name in TASKS else []
    return [m for t in [*first, *tasks()] for m in t.metrics]


def _base(key: str, task_name: str | None) -> str:
    m = metric_of(key, task_name)
    return m.name if m is not None else key
