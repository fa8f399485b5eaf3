"""What the tasks that read ``type: binary`` outputs share: a logit's probability, which
values are positive at the output's threshold, and the area under the ROC curve as
scikit-learn's ``roc_auc_score`` computes it, in NumPy."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.tasks.threshold import at_least


class NotProbabilities(UserError):
    """A binary output's value that is not what its ``form`` says: a probability in [0, 1],
    or a finite logit."""

    def __init__(self, *, output: str, value: float, logit: bool) -> None:
        if logit:
            what = "is not a finite logit (form: logit)"
        else:
            what = (
                "is not a probability in [0, 1] (a logit without its sigmoid? declare "
                "`binary: {form: logit}`)"
            )
        super().__init__(f"output {output!r}: the value {value} {what}")
        self.output = output
        self.value = value
        self.logit = logit


def mann_whitney_auc(
    score: npt.NDArray[np.float64], positive: npt.NDArray[np.bool_]
) -> float | None:
    """The probability that a positive's score exceeds a negative's, ties counting one half
    (the Mann-Whitney statistic: mean rank of the positives, tied scores sharing their mean
    rank, less its least value, over positives x negatives); None unless both classes occur."""
    pos = int(np.count_nonzero(positive))
    neg = len(positive) - pos
    if pos == 0 or neg == 0:
        return None
    _, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts, dtype=np.float64)
    mean_rank = ends - (counts - 1) / 2.0
    ranks = mean_rank[inverse]
    return float((ranks[positive].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def sigmoid(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``1 / (1 + exp(-x))`` in float64, without overflow for large negative ``x``."""
    out: npt.NDArray[np.float64] = np.where(
        x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x)))
    )
    return out


def probabilities(values: npt.ArrayLike, *, logit: bool, output: str) -> npt.NDArray[np.float64]:
    """A binary output's values as probabilities of the positive class, in float64: their
    sigmoid where they are logits; ``NotProbabilities`` names the first value that is not."""
    x = np.asarray(values, dtype=np.float64)
    good = np.isfinite(x) if logit else np.isfinite(x) & (x >= 0) & (x <= 1)
    if not good.all():
        raise NotProbabilities(output=output, value=float(x[~good][0]), logit=logit)
    return sigmoid(x) if logit else x


def positives(
    values: npt.ArrayLike, *, threshold: float, logit: bool, output: str
) -> npt.NDArray[np.bool_]:
    """Where a binary output's values are positive: their probability (``probabilities``) at
    or above ``threshold``, compared in the output's own precision (``threshold``: a float32
    0.7 meets threshold 0.7; a logit's sigmoid is rounded to that precision first)."""
    x = np.asarray(values)
    return at_least(probabilities(x, logit=logit, output=output), threshold, dtype=x.dtype)
