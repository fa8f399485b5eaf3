"""Frame-level metrics over every scored frame of every sample (micro-averaged), each with
the case where it is undefined: the run then fails (``UndefinedMetric``), never records 0.

A frame is predicted speech when its probability is at or above the output's threshold
(silero-vad's ``speech_prob >= threshold``). With TP, FP, FN counted over frames:

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

from pinbench.evaluator.undefined import UndefinedMetric

Floats = npt.NDArray[np.float64]
Flags = npt.NDArray[np.bool_]


def activity_metrics(probability: Floats, speech: Flags, threshold: float) -> dict[str, float]:
    """The metrics of frames' speech ``probability`` against whether each ``speech``."""
    predicted = probability >= threshold
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
    """The Mann-Whitney statistic: mean rank of the positives (tied scores share their mean
    rank), less its least value, over positives x negatives."""
    pos = int(np.count_nonzero(positive))
    neg = len(positive) - pos
    if pos == 0 or neg == 0:
        kind = "speech" if pos else "non-speech"
        raise UndefinedMetric(
            metric="frame_roc_auc",
            reason=f"every frame of the ground truth is {kind}: ROC-AUC needs both classes",
        )
    _, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts, dtype=np.float64)
    mean_rank = ends - (counts - 1) / 2.0
    ranks = mean_rank[inverse]
    return float((ranks[positive].sum() - pos * (pos + 1) / 2.0) / (pos * neg))
