"""Speech recognition: audio samples answered by generating (``worker.generation``), the
answers scored by the host with WER and CER (the package's docstring defines them)."""

from __future__ import annotations

from typing import Any

from pinbench.errors import UserError
from pinbench.tasks.base import Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.parity import Agreement, Recorded
from pinbench.tasks.speech.declared import DATASETS, METRICS
from pinbench.worker.lines import LabelProblem


class SpeechRecognition(Task):
    name = "speech-recognition"
    title = "speech recognition"
    datasets = DATASETS
    generates = DATASETS.generates
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.tasks.text_recognition.truth import read_texts

        if source.dataset.data is None or source.dataset.data.format != "audio":
            raise LabelProblem(
                path="data",
                reason="a speech-recognition dataset's samples are a folder of WAV files "
                "(data.format audio)",
            )
        texts = read_texts(
            source.dataset.labels,
            samples=source.listed,
            count=source.count,
            folder=source.folder,
            read=source.paths.__getitem__,
        )
        return {"truth": texts}

    def score_answers(self, answers: list[str], references: list[str]) -> Scored:
        from pinbench.tasks.speech.metrics import speech_metrics

        scored = speech_metrics(answers, references)
        scored.metrics["references_count"] = float(len(references))
        return scored

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """The answers' token ids, as text generation compares them."""
        from pinbench.tasks.generation.task import TextGeneration

        return TextGeneration().parity(reference, other)

    def prepare(self, context: Context) -> Scorer | None:
        raise UserError(
            "a speech-recognition dataset is answered by generating (pinbench.worker."
            "generation, with a request's `generation` section), not by one prediction per "
            "sample"
        )
