"""Classification: what an output of ``type: classification`` must hold, and its metrics.

Shape (decision 115): one row of class scores per sample, ``(N, C)``. Axes of length 1 beside
the class axis are allowed and dropped (``(N, 1, C)``, ``(N, C, 1, 1)`` as convolutional heads
give them): they hold no other values. Any other shape is refused before anything is timed,
naming the output and its shape: ``(N,)`` is one value per sample (a class index, not its
scores), and ``(N, 40, 6625)`` is 40 distributions per sample (text recognition): flattened,
top-1 would rank 265,000 unrelated values and record a meaningless number. The first axis
must be the batch's sample count, or the outputs would be matched to the wrong labels. The
first answer is checked so in every mode (a declared type is honoured or refused); in accuracy
mode its class count must also be the dataset's (``ClassCountMismatch`` in ``measure``), and
where the dataset declares no class count, every label must be one of its classes
(``LabelOutsideScores``): a label past the last score can never be predicted, so top-1 would
count it as a miss and record a number for a model and labels that do not fit.

Metrics, per the scored output, its classes ranked as its steps declare (``ranking``: highest
score first unless ``argsort: {descending: false}``, compared exactly in the scores' own type):

- ``top1``: the share of samples whose first-ranked class is their class; on a tie, the lowest
  class index is the prediction (as NumPy's ``argmax``, or ``argmin`` lowest first);
- ``top5``: the share whose class is among the five first-ranked; only for 5 classes or more
  (with fewer it would always be 1.0, so it is left out, not recorded) and where the output
  keeps five (a ``topk`` of fewer leaves it out too);
- ``accuracy_samples_count``: the samples scored.

Undefined: a NaN score (its rank is undefined: NumPy sorts it last, PyTorch's argmax takes it
as the largest), and no sample at all. Either fails the run (``UndefinedMetric``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.tasks.classification.ranking import Ranking, ranked_classes
from pinbench.worker.undefined import UndefinedMetric

HIGHEST_FIRST = Ranking()
"""The ranking of an output that declares no argsort or topk step."""


class NotClassScores(UserError):
    """A classification output whose shape is not one row of class scores per sample."""

    def __init__(self, *, output: str, shape: tuple[int, ...], reason: str) -> None:
        super().__init__(
            f"classification output {output!r} has shape {list(shape)}: {reason}; a "
            "classification output is (N, classes), one row of class scores per sample "
            "(axes of length 1 beside the classes are allowed): declare another output, or "
            "give this one another type"
        )
        self.output = output
        self.shape = shape
        self.reason = reason


class LabelOutsideScores(UserError):
    """A sample's label is a class index the output has no score for (or a negative one)."""

    def __init__(self, *, output: str, classes: int, label: int) -> None:
        super().__init__(
            f"classification output {output!r} scores {classes} classes (0..{classes - 1}) but "
            f"a label is class {label}: the model cannot predict it, so the dataset's labels "
            "are not this model's classes (pair it with a dataset labelled for it, or declare "
            "the dataset's `labels.classes`)"
        )
        self.output = output
        self.classes = classes
        self.label = label


def check_labels(classes: int, truth: npt.NDArray[np.integer], *, name: str) -> None:
    """Every label in ``truth`` is a class index of an output scoring ``classes`` classes,
    else ``LabelOutsideScores``."""
    if not truth.size:
        return
    low, high = int(truth.min()), int(truth.max())
    if low < 0 or high >= classes:
        raise LabelOutsideScores(output=name, classes=classes, label=low if low < 0 else high)


def class_scores(
    output: npt.ArrayLike, *, name: str, batch: int | None = None
) -> npt.NDArray[np.generic]:
    """``output`` as ``(N, C)`` (axes of length 1 beside the class axis dropped), or
    ``NotClassScores``; ``batch``, when given, is the sample count ``N`` must be."""
    x = np.asarray(output)
    shape = tuple(int(d) for d in x.shape)

    def refuse(reason: str) -> NotClassScores:
        return NotClassScores(output=name, shape=shape, reason=reason)

    if x.ndim < 2:
        raise refuse("one value per sample, not a score per class")
    if batch is not None and shape[0] != batch:
        raise refuse(f"its first axis should be the batch's {batch} samples")
    longer = [d for d in shape[1:] if d != 1]
    if len(longer) > 1:
        raise refuse(
            f"{' x '.join(map(str, shape[1:]))} values per sample, not one score per class"
        )
    return x.reshape(shape[0], longer[0] if longer else 1)


def classification_metrics(
    outputs: npt.NDArray[np.generic],
    truth: npt.NDArray[np.int64],
    *,
    name: str = "output",
    ranking: Ranking = HIGHEST_FIRST,
) -> dict[str, float]:
    """``top1`` (and ``top5`` for 5 classes or more, five kept) of ``outputs`` (class scores,
    shaped as ``class_scores`` allows, ranked as ``ranking`` says) against each sample's class
    index ``truth``."""
    scores = class_scores(outputs, name=name, batch=len(truth))
    if scores.dtype.kind not in "biuf":  # booleans, integers, floats: ranked as they are
        raise NotClassScores(
            output=name,
            shape=tuple(int(d) for d in np.shape(outputs)),
            reason=f"its values are {scores.dtype}, not real numbers to rank",
        )
    if not len(truth):
        raise UndefinedMetric(metric="top1", reason="no sample was scored")
    check_labels(scores.shape[1], truth, name=name)
    nan = np.flatnonzero(np.isnan(scores).any(axis=1) if scores.dtype.kind == "f" else [])
    if nan.size:
        raise UndefinedMetric(
            metric="top1",
            reason=f"output {name!r} gives NaN scores for {nan.size} of the scored samples "
            f"(the first at position {int(nan[0])}): their ranking, so their prediction, is "
            "undefined",
        )
    order = ranked_classes(scores, ranking)
    metrics = {"top1": float(np.mean(order[:, 0] == truth))}
    if ranking.ranks_top5(scores.shape[1]):  # with fewer classes top-5 would always be 1.0
        metrics["top5"] = float(np.mean(np.any(order[:, :5] == truth[:, None], axis=1)))
    return metrics | {"accuracy_samples_count": float(len(truth))}
