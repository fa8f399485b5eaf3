"""The metrics each task records, as data: their keys, labels, units, directions and which
one lists show, read without importing a task (issue 83, item 7).

Each task folder declares its metrics in its ``declared`` module (a tuple ``METRICS`` of
``Metric``, importing nothing but this module) and its ``Task`` class takes them from there;
``DECLARED`` names that module for each task of ``registry.TASKS``. Whatever only names or
shows a recorded metric (``runs list``, ``runs show``, ``series show``, ``gate``, the reports'
tables) asks here, so reading a home with history imports no task, no scorer and no NumPy.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinbench.tasks.table import TASKS


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric a task records."""

    name: str
    """Its key in a run's metrics (``[a-z0-9_]``)."""
    label: str
    """How people read it (``top-1``, ``mAP``, ``CER``)."""
    unit: str = "fraction"
    """``fraction`` (0..1, shown with 4 decimals), ``count``, ``ratio`` or ``value``."""
    exact: bool = True
    """A rerun of the same lockfile must give it again, bit for bit (the model, its inputs and
    the scoring are all pinned); a verdict says "accuracy differs" otherwise."""
    higher_is_better: bool = True
    per_output: bool = False
    """Recorded once per scored output as ``<name>_<output>`` when a task scores several."""
    headline: bool = False
    """What lists (``runs list``, the web UI's tables, report charts) show for the task."""
    by_model: bool = False
    """Computed beside the model from what only it gives (text generation's perplexity, from
    the references' per-token losses): the one kind of task metric the host records as the
    evaluator gave it (``evaluator.scoring``; decision 277)."""

    def matches(self, key: str) -> bool:
        """Whether a recorded metric ``key`` is this metric (or one output's copy of it)."""
        return key == self.name or (self.per_output and key.startswith(self.name + "_"))

    def show(self, value: float) -> str:
        if self.unit == "count":
            return f"{value:.0f}"
        if self.unit == "fraction":
            return f"{value:.4f}"
        from pinbench.shown import fmt_sig

        return fmt_sig(value)


DECLARED: dict[str, str] = {
    "classification": "pinbench.tasks.classification.declared",
    "sentence-similarity": "pinbench.tasks.similarity.declared",
    "detection": "pinbench.tasks.detection.declared",
    "segmentation": "pinbench.tasks.segmentation.declared",
    "text-recognition": "pinbench.tasks.text_recognition.declared",
    "voice-activity": "pinbench.tasks.vad.declared",
    "text-generation": "pinbench.tasks.generation.declared",
    "speech-recognition": "pinbench.tasks.speech.declared",
    "speaker-verification": "pinbench.tasks.speaker.declared",
    "note-transcription": "pinbench.tasks.notes.declared",
    "token-classification": "pinbench.tasks.tokens.declared",
    "question-answering": "pinbench.tasks.question_answering.declared",
    "audio-to-audio": "pinbench.tasks.audio_to_audio.declared",
    "image-to-image": "pinbench.tasks.image_to_image.declared",
    "other": "pinbench.tasks.classification.declared",
}
"""Where each built-in task of ``registry.TASKS`` (in its order) declares its metrics; a test
holds that the two name the same tasks and that each task's ``metrics`` are these. A task
added by its ``registry.TASKS`` line alone is asked for its metrics (it is imported)."""


def known(task_name: str | None) -> bool:
    """Whether ``task_name`` is a task pinbench knows (``registry.TASKS``)."""
    return task_name is not None and (task_name in DECLARED or task_name in TASKS)


def declared(task_name: str) -> tuple[Metric, ...]:
    """The metrics task ``task_name`` records, in its order; none for a task not known."""
    where = DECLARED.get(task_name)
    if where is not None:
        found: tuple[Metric, ...] = importlib.import_module(where).METRICS
        return found
    if not known(task_name):
        return ()
    module, _, cls = TASKS[task_name].partition(":")
    added: tuple[Metric, ...] = getattr(importlib.import_module(module), cls).metrics
    return added


def _searched(task_name: str | None) -> list[tuple[str, tuple[Metric, ...]]]:
    """The run's task first (when known), then every built-in task."""
    first = [task_name] if task_name is not None and known(task_name) else []
    return [(n, declared(n)) for n in [*first, *DECLARED]]


def metric_of(key: str, task_name: str | None = None) -> Metric | None:
    """What a recorded metric ``key`` is: looked up in the run's task first (when known),
    then in every task; None for a metric no task declares (latency, energy, training)."""
    for _, metrics in _searched(task_name):
        found = next((m for m in metrics if m.matches(key)), None)
        if found is not None:
            return found
    return None


def headline(
    metrics: Mapping[str, Any], task_name: str | None = None
) -> tuple[str, Metric, float] | None:
    """What lists show for a run: its task's headline metric, if recorded; with no task
    known, the first task whose headline metric the run recorded. (task, metric, value)."""
    searched = _searched(task_name)
    for name, declared_metrics in searched[:1] if known(task_name) else searched:
        for m in declared_metrics:
            if m.headline and isinstance(metrics.get(m.name), int | float):
                return name, m, float(metrics[m.name])
    return None


def exact_metrics(metrics: Mapping[str, Any], task_name: str | None = None) -> list[str]:
    """The recorded metrics a rerun must give again exactly, in a stable order (the run's
    task's declared order first)."""
    found = [k for k in metrics if (m := metric_of(k, task_name)) is not None and m.exact]
    rank = {m.name: i for i, m in enumerate(m for _, ms in _searched(task_name) for m in ms)}

    def base(key: str) -> str:
        m = metric_of(key, task_name)
        return m.name if m is not None else key

    return sorted(found, key=lambda k: (rank.get(base(k), len(rank)), k))
