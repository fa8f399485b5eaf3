"""A one-sigmoid binary classifier on a classification dataset: the model's one ``type: binary``
output gives one value per sample, the probability of the positive class (or, ``binary:
{form: logit}``, the sigmoid's input), and the dataset's labels are class 0 (negative) and
class 1 (positive).

Shape: one value per sample, ``(N,)`` or ``(N, 1)`` (more axes of length 1 allowed); anything
else is refused on the first answer, naming the output (a two-column softmax is a
``classification`` output). The dataset must declare 2 classes, or none and label every sample
0 or 1: another label is refused before anything is timed.

Metrics, with a sample predicted positive where its probability is at or above the output's
``binary.threshold`` (compared in the output's own precision, ``tasks.threshold``: a float32
0.7 meets threshold 0.7) and TP, FP, TN, FN counted over the scored samples:

- ``binary_accuracy`` = (TP + TN) / N: undefined with no sample (the run fails);
- ``binary_f1`` = 2 TP / (2 TP + FP + FN) (scikit-learn's ``f1_score``): undefined when
  neither the truth nor the predictions hold a positive;
- ``binary_roc_auc``: the probability that a positive sample's value exceeds a negative's,
  ties one half (``roc_auc_score``), on the values as the model gives them (a logit's order
  is its probability's, without the ties a sigmoid's float rounding would make): undefined
  unless the truth holds both classes.

An undefined ``binary_f1`` or ``binary_roc_auc`` describes what the dataset lacks, not a
wrong model: it is left out of the metrics and its reason kept in the details
(``undefined_metrics``), and ``binary_accuracy`` is recorded (decision 230).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.ports import Output
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer
from pinbench.tasks.binary import mann_whitney_auc, positives, probabilities
from pinbench.tasks.classification.rows import SAMPLE_ROWS
from pinbench.tasks.parity import (
    Agreement,
    Figure,
    Incomparable,
    Recorded,
    difference_figures,
    same_samples,
    tensor_difference,
)
from pinbench.tasks.shapes import stacked
from pinbench.worker.undefined import DETAILS_KEY, UndefinedMetric

Floats = npt.NDArray[np.float64]


class NotOneValuePerSample(UserError):
    """A binary output whose answer is not one value per sample."""

    def __init__(self, *, output: str, shape: tuple[int, ...], reason: str) -> None:
        super().__init__(
            f"binary output {output!r} has shape {list(shape)}: {reason}; a binary output is "
            "one value per sample, (N,) or (N, 1) (scores of two classes are a classification "
            "output)"
        )
        self.output = output
        self.shape = shape
        self.reason = reason


class NotTwoClasses(UserError):
    """A binary classifier paired with a dataset whose labels are not classes 0 and 1."""

    def __init__(self, *, output: str, dataset: str, reason: str) -> None:
        super().__init__(
            f"binary output {output!r} scores class 1 against class 0 but dataset {dataset} "
            f"{reason}: pair it with a dataset of two classes, 0 the negative and 1 the positive"
        )
        self.output = output
        self.dataset = dataset
        self.reason = reason


def one_value_per_sample(output: npt.ArrayLike, *, name: str, batch: int | None = None) -> Array:
    """``output`` as ``(N,)``, or ``NotOneValuePerSample``; ``batch``: what N must be."""
    x = np.asarray(output)
    shape = tuple(int(d) for d in x.shape)
    if x.ndim < 1:
        raise NotOneValuePerSample(output=name, shape=shape, reason="it has no batch axis")
    if batch is not None and shape[0] != batch:
        raise NotOneValuePerSample(
            output=name, shape=shape, reason=f"its first axis should be the batch's {batch}"
        )
    if any(d != 1 for d in shape[1:]):
        raise NotOneValuePerSample(
            output=name,
            shape=shape,
            reason=f"{' x '.join(map(str, shape[1:]))} values per sample",
        )
    if x.dtype.kind not in "biuf":
        raise NotOneValuePerSample(output=name, shape=shape, reason=f"its values are {x.dtype}")
    return x.reshape(shape[0])


def binary_metrics(
    values: npt.ArrayLike,
    truth: npt.NDArray[np.integer],
    *,
    threshold: float,
    logit: bool,
    name: str,
) -> tuple[dict[str, float], dict[str, str]]:
    """The metrics of one value per sample against each sample's class (0 or 1), and those
    undefined with their reasons."""
    if not len(truth):
        raise UndefinedMetric(metric="binary_accuracy", reason="no sample was scored")
    predicted = positives(values, threshold=threshold, logit=logit, output=name)
    x = np.asarray(values, dtype=np.float64)
    positive = np.asarray(truth) == 1
    tp = int(np.count_nonzero(predicted & positive))
    fp = int(np.count_nonzero(predicted & ~positive))
    fn = int(np.count_nonzero(~predicted & positive))
    metrics = {"binary_accuracy": float(np.mean(predicted == positive))}
    undefined: dict[str, str] = {}
    if 2 * tp + fp + fn:
        metrics["binary_f1"] = 2 * tp / (2 * tp + fp + fn)
    else:
        undefined["binary_f1"] = (
            f"no sample is positive (class 1) and none reached the threshold {threshold}: "
            "F1 counts positives only"
        )
    auc = mann_whitney_auc(x, positive)
    if auc is None:
        only = "positive (class 1)" if positive.any() else "negative (class 0)"
        undefined["binary_roc_auc"] = f"every scored sample is {only}: ROC-AUC needs both classes"
    else:
        metrics["binary_roc_auc"] = auc
    return metrics | {"accuracy_samples_count": float(len(truth))}, undefined


class BinaryScorer(Scorer):
    """Scores a classification dataset's samples with a model's one binary output."""

    def __init__(self, output: Output, context: Context) -> None:
        assert output.binary is not None  # filled in for every binary output
        self.output = output
        self.name = str(output.name)
        self.outputs = [self.name]
        self.threshold = output.binary.threshold
        self.logit = output.binary.logit
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """The first answer is one value per sample of what its form says; in an accuracy
        run, the dataset's classes are 0 and 1."""
        values = one_value_per_sample(answer[self.name], name=self.name, batch=batch)
        probabilities(values, logit=self.logit, output=self.name)
        samples = self.context.samples
        if not self.context.accuracy:
            return
        dataset = self.context.dataset.name
        if samples.classes is not None and samples.classes != 2:
            raise NotTwoClasses(
                output=self.name, dataset=dataset, reason=f"declares {samples.classes} classes"
            )
        if samples.labels is not None and samples.labels.size:
            outside = samples.labels[(samples.labels != 0) & (samples.labels != 1)]
            if outside.size:
                raise NotTwoClasses(
                    output=self.name,
                    dataset=dataset,
                    reason=f"labels a sample class {int(outside[0])}",
                )

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        samples = self.context.samples
        assert samples.labels is not None
        indexes, outputs = stacked(answers, self.outputs)
        values = one_value_per_sample(outputs[self.name], name=self.name)
        truth = samples.labels[indexes]
        metrics, undefined = binary_metrics(
            values, truth, threshold=self.threshold, logit=self.logit, name=self.name
        )
        form = "logit" if self.logit else "probability"
        details: dict[str, Any] = {
            "binary": {"threshold": self.threshold, "form": form, "positive_class": 1},
            "samples": self._rows(indexes, values),
        }
        if undefined:
            details[DETAILS_KEY] = undefined
        return Scored(metrics, values, self.name, details)

    def _rows(self, indexes: list[int], values: Array) -> list[dict[str, Any]]:
        """The first samples as ``details.samples`` rows, in ``classification.rows``' keys:
        the predicted class is ``top1``, the model's value its ``score``."""
        samples = self.context.samples
        assert samples.labels is not None
        shown = indexes[:SAMPLE_ROWS]
        kept = values[: len(shown)]
        predicted = positives(kept, threshold=self.threshold, logit=self.logit, output=self.name)
        names = samples.class_names
        rows = []
        for at, index in enumerate(shown):
            truth, top1 = int(samples.labels[index]), int(predicted[at])
            row: dict[str, Any] = {
                "sample": samples.files[index].path if samples.files is not None else index,
                "truth": truth,
                "top1": top1,
                "score": float(kept[at]),
                "right": truth == top1,
            }
            if names is not None and len(names) == 2:
                row["truth_name"], row["top1_name"] = names[truth], names[top1]
            rows.append(row)
        return rows


def recorded_output(recorded: Recorded) -> Output | None:
    """The binary output a run recorded, as its model declares it (None: another type)."""
    found = [o for o in recorded.model.outputs if str(o.name) == recorded.outputs_name]
    return found[0] if found and found[0].type == "binary" else None


def predicted_classes(recorded: Recorded) -> npt.NDArray[np.bool_]:
    """Each sample's predicted class (True: 1) as the run's own output section reads it."""
    output = recorded_output(recorded)
    if output is None or output.binary is None:
        raise Incomparable(run=recorded.run, reason="it recorded no binary output")
    name = str(output.name)
    values = one_value_per_sample(recorded.outputs, name=name)
    binary = output.binary
    return positives(values, threshold=binary.threshold, logit=binary.logit, output=name)


def binary_parity(reference: Recorded, other: Recorded) -> Agreement:
    """How many samples have the same predicted class in both runs (each read by its own
    output's form and threshold: a probability and a logit export compare), and how far the
    values moved; they agree when every sample's class is the same."""
    ref, out = predicted_classes(reference), predicted_classes(other)
    same_samples(ref, out, run=other.run)
    abs_diff, rel_diff = tensor_difference(
        np.asarray(reference.outputs).reshape(len(ref)),
        np.asarray(other.outputs).reshape(len(out)),
        run=other.run,
    )
    same = int(np.count_nonzero(ref == out))
    return Agreement(
        (
            Figure("class_agree", "same class", float(same), "count"),
            Figure("samples", "samples", float(len(ref)), "count"),
            *difference_figures(abs_diff, rel_diff),
        ),
        same == len(ref),
        "every sample's predicted class the same",
    )
