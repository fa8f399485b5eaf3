"""Extractive question answering: ``questions-jsonl`` samples (a question and its context per
line), ``squad-answers`` labels, a model of two outputs, each feature's start and end logits
``(N, T)`` (T: the tokenize step's max_length), fed the features of ``worker.qa_features``.
The rows the model is fed are features, not questions: LoadGen's samples are features as in
MLPerf's BERT (``Scorer.rows``). The host makes the features again with the model's tokenizer,
checks that the token ids the model was fed are its own, picks each question's answer
(``spans``) and scores the answers (``squad``)."""

from __future__ import annotations

from typing import Any

from pinbench.errors import UserError
from pinbench.registry.ports import Input, Output
from pinbench.registry.steps import Tokenize
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.question_answering.declared import DATASETS, METRICS
from pinbench.tasks.question_answering.truth import read_answers

SHAPE = "(N, T): a score per feature and token (the tokenize step's max_length)"
SHOWN = 20
"""Answers kept in a run's details beside their question and references."""


class NotAQuestionAnsweringModel(UserError):
    def __init__(self, *, model: str, reason: str) -> None:
        super().__init__(f"a question-answering run cannot score model {model}: {reason}")
        self.model = model
        self.reason = reason


class BadSpanScores(UserError):
    def __init__(self, *, output: str, reason: str) -> None:
        super().__init__(f"question answering, output {output!r}: {reason}")
        self.output = output
        self.reason = reason


class QuestionAnswering(Task):
    name = "question-answering"
    title = "extractive question answering"
    datasets = DATASETS
    label_formats = DATASETS.formats
    scores_inputs = True  # the token ids the model was fed, checked against the host's own
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.worker.lines import LabelProblem

        data, path = source.dataset.data, source.dataset.labels.path
        assert path is not None
        if data is None or data.format != "questions-jsonl":
            raise LabelProblem(
                path="data",
                reason="a question-answering dataset's samples are questions about their "
                'contexts (data.format questions-jsonl: {"question": ..., "context": ...})',
            )
        return {"truth": read_answers(source.paths[path], where=path, count=source.count)}

    def prepare(self, context: Context) -> Scorer | None:
        outputs = {
            end: [o for o in context.model.outputs if str(o.name).endswith(f"{end}_logits")]
            for end in ("start", "end")
        }
        fed = [
            (i, s.tokenize)
            for i in context.model.inputs
            for s in i.steps
            if s.tokenize is not None and s.tokenize.output == "input_ids"
        ]
        problem = None
        if any(len(found) != 1 for found in outputs.values()):
            problem = (
                "want one output named *start_logits and one named *end_logits, each "
                f"{SHAPE}; it declares {[str(o.name) for o in context.model.outputs]}"
            )
        elif any(o[0].steps for o in outputs.values()):
            problem = "its logits outputs declare steps; a span is picked from them as they are"
        elif len(fed) != 1:
            problem = (
                "it has no input of token ids (`tokenize` with output input_ids): answers are "
                "cut from the context by the tokens of the model's own tokenizer"
            )
        if problem is not None:
            if context.accuracy:
                raise NotAQuestionAnsweringModel(model=context.model_ref, reason=problem)
            return None
        return SpanScorer(outputs["start"][0], outputs["end"][0], *fed[0], context)


class SpanScorer(Scorer):
    def __init__(
        self, start: Output, end: Output, fed: Input, step: Tokenize, context: Context
    ) -> None:
        self.outputs = [str(start.name), str(end.name)]
        self.fed = fed
        self.step = step
        self.context = context
        self._features: Any = None

    def features(self) -> Any:
        """The host's own features of every question (made once)."""
        from pinbench.worker.qa_features import encode_questions
        from pinbench.worker.text_inputs import configured_pad

        if self._features is None:
            questions = self.context.samples.questions
            if questions is None:
                raise BadSpanScores(
                    output=self.outputs[0],
                    reason="the dataset's samples are not questions (data.format questions-jsonl)",
                )
            files = self.context.model_paths
            self._features = encode_questions(
                questions,
                self.step,
                tokenizer=files[self.step.tokenizer],
                pad_token=configured_pad(files, self.step.tokenizer),
            )
        return self._features

    def rows(self) -> int | None:
        return len(self.features().example)

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        import numpy as np

        for name in self.outputs:
            self._logits(name, np.asarray(answer[name]), batch)

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        import numpy as np

        from pinbench.tasks.question_answering.spans import QuestionFeatures, answer
        from pinbench.tasks.question_answering.squad import squad_scores
        from pinbench.worker.undefined import UndefinedMetric

        encoded = self.features()
        count = len(answers)
        given = arrays.get(str(self.fed.name))
        fed = np.asarray(given if given is not None else ())
        if fed.ndim != 2 or fed.shape[1:] != encoded.ids.shape[1:] or len(fed) < count:
            raise BadSpanScores(
                output=self.outputs[0],
                reason=f"the token ids fed to input {str(self.fed.name)!r} were not returned as "
                f"[{len(encoded.ids)}, {self.step.max_length}] (got {list(fed.shape)}): its "
                "logits cannot be matched to the context",
            )
        fed = fed[:count].astype(np.int64)
        differ = np.flatnonzero((fed != encoded.ids[:count].astype(np.int64)).any(axis=1))
        if len(differ):
            raise BadSpanScores(
                output=self.outputs[0],
                reason=f"feature {int(differ[0])}'s token ids differ from the tokenizer's own: "
                "its logits cannot be matched to the context",
            )
        logits = [
            np.concatenate([self._logits(n, np.asarray(answers[i][n]), 1) for i in range(count)])
            for n in self.outputs
        ]
        starts, ends = (x.astype(np.float64) for x in logits)
        questions = self.context.samples.questions
        assert questions is not None
        example = encoded.example.astype(np.int64)
        last = np.full(len(questions), -1, dtype=np.int64)
        np.maximum.at(last, example, np.arange(len(example)))
        scored = [q for q in range(len(questions)) if last[q] < count]
        if not scored:
            raise UndefinedMetric(
                metric="squad_f1_pct",
                reason=f"the {count} features run hold no question's every feature",
            )
        predicted, spanless = [], 0
        bounds = np.searchsorted(example, np.arange(len(questions) + 1))  # rows in order
        for q in scored:
            rows = np.arange(bounds[q], bounds[q + 1])
            got, found = answer(
                questions[q].context,
                QuestionFeatures(
                    starts[rows],
                    ends[rows],
                    encoded.context[rows],
                    encoded.starts[rows],
                    encoded.ends[rows],
                ),
            )
            predicted.append(got)
            spanless += not found
        truth = [self.context.samples.truth[q] for q in scored]
        metrics = {**squad_scores(predicted, truth), "features_count": float(count)}
        return Scored(
            metrics,
            np.stack(logits, axis=1).astype(np.float32),
            None,
            self._details(scored, predicted, truth, spanless),
        )

    def _details(
        self, scored: list[int], predicted: list[str], truth: list[list[str]], spanless: int
    ) -> dict[str, Any]:
        from pinbench.tasks.question_answering.spans import MAX_ANSWER_LENGTH, N_BEST, NO_ANSWER
        from pinbench.worker.qa_features import settings

        questions = self.context.samples.questions
        assert questions is not None
        stride, query = settings(self.step)
        return {
            "question_answering": {
                "scores": "SQuAD v1.1's evaluate script, times 100 (0-100)",
                "spans": "MLPerf BERT's: n-best, max answer length, max-context windows",
                "n_best": N_BEST,
                "max_answer_length": MAX_ANSWER_LENGTH,
                "max_length": self.step.max_length,
                "doc_stride": stride,
                "max_query_length": query,
                "no_span_count": spanless,
                "no_span_answer": NO_ANSWER,
                "answers": [
                    {"question": questions[q].question[:500], "answer": a[:500], "truth": t}
                    for q, a, t in list(zip(scored, predicted, truth, strict=True))[:SHOWN]
                ],
            }
        }

    def _logits(self, name: str, value: Array, batch: int) -> Array:
        import numpy as np

        length = self.step.max_length
        if value.ndim != 2 or list(value.shape) != [batch, length] or value.dtype.kind != "f":
            raise BadSpanScores(
                output=name,
                reason=f"shape {list(value.shape)} ({value.dtype}) for a batch of {batch}; want "
                f"{SHAPE} of floats, here [{batch}, {length}]",
            )
        if not np.isfinite(value).all():
            raise BadSpanScores(output=name, reason="holds a NaN or an infinity")
        return value
