"""Frame-level metrics over every scored frame of every sample (micro-averaged), each with
the case where it is undefined: the run then fails (``UndefinedMetric``), never records 0.

A frame is predicted speech when its probability is at or above the output's threshold
(silero-vad's ``speech_prob >= threshold``), compared in the output's own precision
(``tasks.threshold``: a float32 0.7 meets threshold 0.7). With TP, FP, FN counted over frames:

- ``frame_precision`` = TP / (TP + FP), undefined when no frame is predicted speech;
- ``frame_recall`` = TP / (TP + FN), undefined when no frame is speech;
- ``frame_f1`` = 2 TP / (2 TP + FP + FN), undefined when neither has a speech frame;
- ``frame_roc_auc``: the probability that a speech frame's probability exceeds a non-speech
  frame's, ties counting one half (the Mann-Whitney statistic, the area under the ROC curve
  that ``sklearn.metrics.roc_auc_score`` computes), undefined unless the truth has frames of
  both classes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.tasks.binary import mann_whitney_auc
from pinbench.tasks.threshold import at_least
from pinbench.worker.undefined import UndefinedMetric

Floats = npt.NDArray[np.float64]
Flags = npt.NDArray[np.bool_]


def activity_metrics(
    probability: Floats, speech: Flags, threshold: float, *, dtype: npt.DTypeLike | None = None
) -> dict[str, float]:
    """The metrics of frames' speech ``probability`` against whether each ``speech``;
    ``dtype``: the output's, which the threshold is compared in (by default the
    probabilities' own)."""
    predicted = at_least(probability, threshold, dtype=dtype)
    tp = int(np.count_nonzero(predicted & speech))
    fp = int(np.count_nonzero(predicted & ~speech))
    fn = int(np.count_nonzero(~predicted & speech))
    if tp + fp == 0:
        raise UndefinedMetric(
            metric="frame_precision",
            reason=f"no frame's speech probability reached the threshold {threshold}",
        )
    if tp + fn == 0:
        raise UndefinedMetric(metric="frame_recall", reason="the ground truth has no speech frame")
    return {
        "frame_f1": 2 * tp / (2 * tp + fp + fn),
        "frame_precision": tp / (tp + fp),
        "frame_recall": tp / (tp + fn),
        "frame_roc_auc": roc_auc(probability, speech),
        "frames_count": float(len(speech)),
    }


def roc_auc(score: Floats, positive: Flags) -> float:
    """The Mann-Whitney statistic (``tasks.auc``); undefined unless both classes occur."""
    found = mann_whitney_auc(score, positive)
    if found is None:
        kind = "speech" if np.count_nonzero(positive) else "non-speech"
        raise UndefinedMetric(
            metric="frame_roc_auc",
            reason=f"every frame of the ground truth is {kind}: ROC-AUC needs both classes",
        )
    return found
