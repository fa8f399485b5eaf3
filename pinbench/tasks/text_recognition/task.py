"""Text recognition: a ``type: text`` output decoded by CTC against each sample's text, scored
with CER, WER and exact match (the package's docstring defines them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.ports import Output
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.parity import Agreement, Recorded
from pinbench.tasks.text_recognition.ctc import (
    Alphabet,
    best_path,
    check_scores,
    decode,
    read_alphabet,
)
from pinbench.tasks.text_recognition.declared import DATASETS, METRICS
from pinbench.worker.lines import LabelProblem
from pinbench.worker.undefined import UndefinedMetric

TEXT_ROWS = 100
"""The first samples' decoded texts kept in a run's details (``details.samples``)."""


class NoTextOutput(UserError):
    def __init__(self, *, model: str, outputs: list[str]) -> None:
        super().__init__(
            f"a text-recognition run needs one output of `type: text` with its `ctc` section; "
            f"model {model} declares {', '.join(outputs) or 'no outputs'}"
        )
        self.model = model
        self.outputs = outputs


class TextRecognition(Task):
    name = "text-recognition"
    title = "text recognition"
    datasets = DATASETS
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.tasks.text_recognition.truth import read_texts

        texts = read_texts(
            source.dataset.labels,
            samples=source.listed,
            count=source.count,
            folder=source.folder,
            read=source.paths.__getitem__,
        )
        return {"truth": texts}

    def check_truth(self, source: TruthSource) -> None:
        """As a run reads them, and refused where no run could score them: references that
        hold no word leave CER or WER undefined."""
        texts = self.read_truth(source)["truth"]
        if not any(t.split() for t in texts):
            path = source.dataset.labels.path
            assert path is not None
            raise LabelProblem(
                path=path,
                reason="no sample's text holds a word: CER and WER would be undefined",
            )

    def prepare(self, context: Context) -> Scorer | None:
        found = [o for o in context.model.outputs if o.type == "text"]
        if not found:
            if context.accuracy:
                raise NoTextOutput(
                    model=context.model_ref,
                    outputs=[f"{o.name} ({o.type})" for o in context.model.outputs],
                )
            return None
        if len(found) > 1:
            raise UserError(
                f"model {context.model_ref} declares {len(found)} outputs of type text "
                f"({', '.join(str(o.name) for o in found)}): a text-recognition run reads one"
            )
        output = found[0]
        assert output.ctc is not None  # the manifest requires it
        alphabet = read_alphabet(output.ctc, context.model_paths, output=str(output.name))
        truth: list[str] | None = context.samples.truth
        if context.accuracy and truth is not None and not any(t.split() for t in truth):
            raise UndefinedMetric(metric="wer", reason="no sample's text holds a word")
        return CtcScorer(output, alphabet, context)

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """Each sample's decoded text in both runs (``parity.text_parity``)."""
        from pinbench.tasks.text_recognition.parity import text_parity

        return text_parity(reference, other)


class CtcScorer(Scorer):
    def __init__(self, output: Output, alphabet: Alphabet, context: Context) -> None:
        self.outputs = [str(output.name)]
        self.alphabet = alphabet
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """The first answer's text output is ``(batch, T, C)``, C the alphabet's classes."""
        name = self.outputs[0]
        shape = tuple(int(d) for d in np.shape(answer[name]))
        check_scores(shape, self.alphabet, output=name, batch=batch)

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        """Each answered sample's best path and text, then the metrics over them. Every answer
        is checked as the first was (a later call may give another shape); samples fed one at
        a time at sizes of their own may give paths of different lengths, recorded padded
        with the blank (which decodes to nothing)."""
        from pinbench.tasks.text_recognition.metrics import text_metrics

        truth: list[str] = self.context.samples.truth
        name = self.outputs[0]
        indexes = sorted(answers)
        for i in indexes:
            shape = tuple(int(d) for d in np.shape(answers[i][name]))
            check_scores(shape, self.alphabet, output=name, batch=1)  # one sample each
        paths = [best_path(answers[i][name], output=name, first=i) for i in indexes]
        texts = [decode(path[0], self.alphabet) for path in paths]
        references = [truth[i] for i in indexes]
        metrics = text_metrics(texts, references)
        metrics["accuracy_samples_count"] = float(len(indexes))
        files = self.context.samples.files
        rows = [
            {
                "sample": files[i].path if files is not None else i,
                "truth": references[at],
                "text": texts[at],
                "right": texts[at] == references[at],
            }
            for at, i in enumerate(indexes[:TEXT_ROWS])
        ]
        steps = max((p.shape[1] for p in paths), default=0)
        recorded = np.concatenate(
            [
                np.pad(p, ((0, 0), (0, steps - p.shape[1])), constant_values=self.alphabet.blank)
                for p in paths
            ]
        )
        return Scored(metrics, recorded, name, {"samples": rows})
