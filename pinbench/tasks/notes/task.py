"""Note transcription: each audio file's notes as the model's one output gives them, scored
against the file's reference notes (``metrics``)."""

from __future__ import annotations

import numpy as np

from pinbench.errors import UserError
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer
from pinbench.tasks.file_labels import FileLabelsTask, Reader
from pinbench.tasks.notes.declared import DATASETS, METRICS
from pinbench.tasks.notes.truth import MAX_NOTES, Notes, note_problem, read_notes
from pinbench.tasks.shapes import padded

SHAPE = "(N, K, 3): K notes per file, each [onset s, offset s, MIDI pitch], rows of NaN padding"


class NotANoteModel(UserError):
    """A note-transcription accuracy run on a model that does not declare one notes output."""

    def __init__(self, *, model: str, outputs: list[str]) -> None:
        super().__init__(
            f"model {model} declares {', '.join(outputs) or 'no outputs'}: a note-"
            f"transcription run reads one output of type tensor, the notes {SHAPE} (a model "
            "giving posteriorgrams needs `postprocess` code that makes them notes, as "
            "basic-pitch's model_output_to_notes does)"
        )
        self.model = model
        self.outputs = outputs


class BadNotes(UserError):
    """An answer that is not notes as ``SHAPE`` says."""

    def __init__(self, *, output: str, sample: str, reason: str) -> None:
        super().__init__(f"output {output!r} of sample {sample}: {reason}")
        self.output = output
        self.sample = sample
        self.reason = reason


class NoteTranscription(FileLabelsTask):
    name = "note-transcription"
    title = "note transcription"
    datasets = DATASETS
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    metrics = METRICS

    @staticmethod
    def reader() -> Reader:
        return read_notes

    def prepare(self, context: Context) -> Scorer | None:
        outputs = context.model.outputs
        if len(outputs) != 1 or outputs[0].type != "tensor":
            if not context.accuracy:
                return None
            raise NotANoteModel(
                model=context.model_ref, outputs=[f"{o.name} ({o.type})" for o in outputs]
            )
        return NoteScorer(str(outputs[0].name), context)


class NoteScorer(Scorer):
    def __init__(self, output: str, context: Context) -> None:
        self.outputs = [output]
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """The first answer is notes as ``SHAPE`` says, for each sample of the batch."""
        value = np.asarray(answer[self.outputs[0]])
        if value.ndim != 3 or value.shape[0] != batch or value.shape[2] != 3:
            raise BadNotes(
                output=self.outputs[0],
                sample="#0",
                reason=f"shape {list(value.shape)} for a batch of {batch} samples; want {SHAPE}",
            )
        for row in range(batch):
            self._notes(value[row], row)

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        from pinbench.tasks.notes.metrics import note_metrics

        indexes = sorted(answers)
        name = self.outputs[0]
        raw = [np.asarray(answers[i][name]) for i in indexes]
        for index, value in zip(indexes, raw, strict=True):
            if value.ndim != 3 or value.shape[0] != 1 or value.shape[2] != 3:
                raise BadNotes(
                    output=name,
                    sample=self._sample(index),
                    reason=f"shape {list(value.shape)}; want {SHAPE}",
                )
        estimates = [self._notes(v[0], i) for i, v in zip(indexes, raw, strict=True)]
        truth: list[Notes] = self.context.samples.truth
        metrics = note_metrics([truth[i] for i in indexes], estimates)
        details = {
            "note_transcription": {
                "onset_tolerance_s": 0.05,
                "pitch_tolerance_cents": 50.0,
                "offset_ratio": 0.2,
                "offset_min_tolerance_s": 0.05,
                "averaged": "matches pooled over files",
            }
        }
        recorded = padded([v.astype(np.float64) for v in raw]) if raw else None
        return Scored(metrics, recorded, name, details)

    def _sample(self, index: int) -> str:
        files = self.context.samples.files
        return files[index].path if files is not None else f"#{index}"

    def _notes(self, value: Array, index: int) -> Notes:
        """One file's notes, ``(K, 3)``, its all-NaN rows (padding) left out."""
        rows = np.asarray(value, dtype=np.float64)
        kept = rows[~np.isnan(rows).all(axis=1)]
        if len(kept) > MAX_NOTES:  # as many as a reference file may hold
            raise BadNotes(
                output=self.outputs[0],
                sample=self._sample(index),
                reason=f"{len(kept)} notes, more than {MAX_NOTES}",
            )
        for note in kept:
            problem = note_problem([float(v) for v in note])
            if problem is not None:
                raise BadNotes(
                    output=self.outputs[0],
                    sample=self._sample(index),
                    reason=f"note {[float(v) for v in note]} {problem}",
                )
        return kept
