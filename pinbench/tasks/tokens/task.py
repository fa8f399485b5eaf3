"""Token classification: one output of scores per token and label, ``(N, T, C)``, named by
the output's ``labels`` file (the model's ``id2label``, in id order); each word tagged with
the argmax label of its first sub-token (``words``), the tags scored as entities
(``entities``) against the ``iob2-tags`` labels (``truth``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.ports import Input, Output
from pinbench.registry.steps import Tokenize
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.tokens.declared import DATASETS, METRICS
from pinbench.tasks.tokens.truth import TAG, read_tags

SHAPE = "(N, T, C): a score per sample, token (the tokenize step's max_length) and label"


class NotATokenModel(UserError):
    """A token-classification run on a model this task cannot read."""

    def __init__(self, *, model: str, reason: str) -> None:
        super().__init__(f"a token-classification run cannot score model {model}: {reason}")
        self.model = model
        self.reason = reason


class BadTokenScores(UserError):
    def __init__(self, *, output: str, reason: str) -> None:
        super().__init__(f"token classification, output {output!r}: {reason}")
        self.output = output
        self.reason = reason


class TokenClassification(Task):
    name = "token-classification"
    title = "token classification"
    datasets = DATASETS
    label_formats = DATASETS.formats
    scores_inputs = True  # the token ids the model was fed, checked against the host's own
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.worker.datasets import read_text_lines
        from pinbench.worker.lines import LabelProblem

        data = source.dataset.data
        path = source.dataset.labels.path
        assert path is not None
        if data is None or data.format != "text-lines":
            raise LabelProblem(
                path="data",
                reason="a token-classification dataset's samples are text lines (data.format "
                "text-lines), each a sentence's words separated by single spaces",
            )
        texts = read_text_lines(source.paths[data.path], where=data.path)
        return {"truth": read_tags(source.paths[path], where=path, texts=texts)}

    def prepare(self, context: Context) -> Scorer | None:
        from pinbench.tasks.class_names import class_names

        found = [o for o in context.model.outputs if o.labels is not None]
        fed = [
            (i, s.tokenize)
            for i in context.model.inputs
            for s in i.steps
            if s.tokenize is not None and s.tokenize.output == "input_ids"
        ]
        problem = None
        if len(found) != 1 or found[0].type not in ("classification", "tensor"):
            problem = (
                f"it declares {len(found)} outputs with a `labels` file; want one, of type "
                f"classification or tensor, the scores {SHAPE}, its labels the model's "
                "id2label in id order"
            )
        elif found[0].steps:
            problem = (
                f"output {found[0].name!r} declares steps; a token-classification run takes "
                "each token's highest score as it is and applies none"
            )
        elif len(fed) != 1:
            problem = (
                "it has no input of token ids (`tokenize` with output input_ids): words are "
                "matched to the tokens of the model's own tokenizer"
            )
        if problem is not None:
            if context.accuracy:
                raise NotATokenModel(model=context.model_ref, reason=problem)
            return None
        output = found[0]
        assert output.labels is not None
        names = class_names(output.labels, context.model_paths, output=str(output.name))
        bad = next((n for n in names if not TAG.fullmatch(n)), None)
        if bad is not None and context.accuracy:
            raise NotATokenModel(
                model=context.model_ref,
                reason=f"label {bad[:80]!r} of output {output.name!r} is not O, B-TYPE or "
                "I-TYPE (IOB2)",
            )
        return TokenScorer(output, names, *fed[0], context)


class TokenScorer(Scorer):
    def __init__(
        self, output: Output, names: list[str], fed: Input, step: Tokenize, context: Context
    ) -> None:
        self.output = output
        self.outputs = [str(output.name)]
        self.names = names
        self.fed = fed
        self.step = step
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        self._scores(np.asarray(answer[self.outputs[0]]), batch)

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        from pinbench.tasks.tokens.entities import entity_metrics
        from pinbench.tasks.tokens.words import first_tokens
        from pinbench.worker.text_inputs import configured_pad
        from pinbench.worker.tokenizing import encode_texts

        samples = self.context.samples
        assert samples.texts is not None
        indexes = sorted(answers)
        texts = [samples.texts[i] for i in indexes]
        files = self.context.model_paths
        encoded = encode_texts(
            texts,
            tokenizer=files[self.step.tokenizer],
            name=self.step.tokenizer,
            max_length=self.step.max_length,
            truncation=self.step.truncation,
            ends=True,
            pad_token=configured_pad(files, self.step.tokenizer),
        )
        assert encoded.ends is not None
        fed = np.asarray(arrays[str(self.fed.name)])
        truth, predicted, kept = [], [], []
        for row, index in enumerate(indexes):
            if not np.array_equal(fed[index].astype(np.int64), encoded.ids[row].astype(np.int64)):
                raise BadTokenScores(
                    output=self.outputs[0],
                    reason=f"sample {index}'s token ids differ from the tokenizer's own: the "
                    "words cannot be matched to the tokens the model read",
                )
            scores = self._scores(np.asarray(answers[index][self.outputs[0]]), 1)[0]
            first = first_tokens(texts[row], encoded.ends[row], sample=index)
            labels = np.argmax(scores[first], axis=-1)  # the first highest score on a tie
            predicted.append([self.names[int(k)] for k in labels])
            truth.append(samples.truth[index])
            kept.append(scores)
        metrics = entity_metrics(truth, predicted)
        details = {
            "token_classification": {
                "words": "split on single spaces; each takes its first sub-token's label",
                "entities": "seqeval's default mode (conlleval chunking), micro-averaged",
                "labels": self.names,
            }
        }
        return Scored(metrics, np.stack(kept).astype(np.float32), self.outputs[0], details)

    def _scores(self, value: Array, batch: int) -> Array:
        shape = list(value.shape)
        if (
            value.ndim != 3
            or shape[0] != batch
            or shape[1] != self.step.max_length
            or shape[2] != len(self.names)
        ):
            raise BadTokenScores(
                output=self.outputs[0],
                reason=f"shape {shape} for a batch of {batch}; want {SHAPE}, here "
                f"[{batch}, {self.step.max_length}, {len(self.names)}]",
            )
        return value
