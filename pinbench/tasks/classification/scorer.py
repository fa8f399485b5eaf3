"""A classification run's scorer: each classification output's class scores checked on the first
answer and scored against the samples' classes (``scores``), with the per-sample rows."""

from __future__ import annotations

import numpy as np

from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer
from pinbench.tasks.classification.errors import ClassCountMismatch
from pinbench.tasks.classification.ranking import check_softmax_axes, ranking_of
from pinbench.tasks.classification.rows import sample_rows
from pinbench.tasks.classification.scores import (
    check_labels,
    class_scores,
    classification_metrics,
)
from pinbench.tasks.shapes import stacked


class ClassScorer(Scorer):
    def __init__(self, scored: dict[str, str], context: Context) -> None:
        self.scored = scored
        self.outputs = list(scored)
        self.context = context
        declared = {str(o.name): o for o in context.model.outputs}
        self.rankings = {name: ranking_of(declared[name]) for name in scored}
        """Each output's classes ranked as its steps declare (``ranking``)."""

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """Each classification output of the first answer is one row of class scores per
        sample (``scores.class_scores``), its softmax steps along its class axis, and, in
        accuracy mode, scores as many classes as the dataset declares; where it declares
        none, one for every label."""
        samples = self.context.samples if self.context.accuracy else None
        for name in self.outputs:
            scores = class_scores(answer[name], name=name, batch=batch).shape[1]
            check_softmax_axes(self.rankings[name], np.shape(answer[name]), name=name)
            if samples is not None and samples.classes is not None and scores != samples.classes:
                raise ClassCountMismatch(
                    output=name,
                    scores=scores,
                    dataset=self.context.dataset.name,
                    classes=samples.classes,
                )
            if samples is not None and samples.labels is not None:
                check_labels(scores, samples.labels, name=name)

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        samples = self.context.samples
        assert samples.labels is not None
        indexes, outputs = stacked(answers, self.outputs)
        truth = samples.labels[indexes]
        metrics: dict[str, float] = {}
        for name, key in self.scored.items():
            found = classification_metrics(
                outputs[name], truth, name=name, ranking=self.rankings[name]
            )
            if len(self.scored) > 1:  # the metric says which output: top1_<output>
                found = {
                    (f"{m}_{key}" if m != "accuracy_samples_count" else m): v
                    for m, v in found.items()
                }
            metrics.update(found)
        recorded = self.outputs[0]
        return Scored(
            metrics,
            outputs[recorded],
            recorded,
            {"samples": sample_rows(samples, indexes, outputs[recorded], self.rankings[recorded])},
        )
