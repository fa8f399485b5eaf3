"""The equal error rate and the minimum detection cost of trial scores, each from the ROC of
the scores against whether each trial is a target trial (one speaker), as
``sklearn.metrics.roc_curve`` gives it: one point per distinct score, taken as a threshold
(a trial is accepted when its score is at or above it), from (0, 0) (nothing accepted) to
(1, 1), with the miss rate ``fnr = 1 - tpr``.

- ``eer``: the rate where the miss rate equals the false-alarm rate, **interpolated**: the
  ROC's points joined by straight lines in (false-alarm rate, miss rate), the point where
  that polyline crosses ``fnr = fpr`` (what ``scipy.optimize.brentq`` finds on
  ``1 - x - interp1d(fpr, tpr)(x)``, as pyannote and SpeechBrain's ``EER`` compute it), not
  the rate at the nearest threshold (voxceleb_trainer's ``max(fpr, fnr)`` at
  ``argmin |fnr - fpr|``), which differs by up to a step of the ROC.
- ``min_dcf``: NIST's detection cost ``C_miss * P_miss * P_target + C_fa * P_fa * (1 -
  P_target)`` at the threshold that makes it least, over every point of the ROC, divided by
  the cost of the better of accepting or rejecting every trial, ``min(C_miss * P_target, C_fa
  * (1 - P_target))`` (VoxSRC's normalisation, as voxceleb_trainer's ``ComputeMinDcf``
  divides), with the parameters ``DCF`` declares: ``P_target`` 0.05, ``C_miss`` 1, ``C_fa`` 1
  (VoxSRC's). Not voxceleb_trainer's points: its ``ComputeErrorRates`` takes a point after
  each trial in score order, so tied scores are split by the order the trials came in and its
  least cost can fall between them; here a point is a distinct score, as ``roc_curve`` gives.

Both are undefined (``UndefinedMetric``; the run fails) unless the trials hold target and
non-target trials.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pinbench.worker.undefined import UndefinedMetric

Floats = npt.NDArray[np.float64]
Flags = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class DetectionCost:
    """The parameters of a detection cost function (NIST SRE's)."""

    p_target: float
    c_miss: float
    c_fa: float


DCF = DetectionCost(p_target=0.05, c_miss=1.0, c_fa=1.0)
"""The parameters ``min_dcf`` is computed with (VoxSRC 2020-2023's); recorded in a run's
details."""


def roc(score: Floats, target: Flags) -> tuple[Floats, Floats]:
    """The false-alarm and miss rates at each distinct score as a threshold, highest first,
    after the point where nothing is accepted (``roc_curve``'s points, none dropped)."""
    order = np.argsort(-score, kind="stable")
    ranked, hits = score[order], target[order]
    last = np.r_[np.flatnonzero(np.diff(ranked)), len(ranked) - 1]  # each distinct score's last
    tp = np.r_[0, np.cumsum(hits, dtype=np.int64)[last]]
    fp = np.r_[0, last + 1 - tp[1:]]
    positives, negatives = int(tp[-1]), int(fp[-1])
    return fp / negatives, 1.0 - tp / positives


def equal_error_rate(fpr: Floats, fnr: Floats) -> float:
    """Where the polyline through ``(fpr, fnr)`` (``fpr`` rising from 0 to 1, ``fnr`` falling
    from 1 to 0) crosses ``fnr = fpr``."""
    gap = fnr - fpr  # from 1 down to -1, never rising
    k = int(np.flatnonzero(gap <= 0)[0])  # k >= 1: gap[0] is 1
    if gap[k] == 0:
        return float(fpr[k])
    t = gap[k - 1] / (gap[k - 1] - gap[k])
    return float(fpr[k - 1] + t * (fpr[k] - fpr[k - 1]))


def min_detection_cost(fpr: Floats, fnr: Floats, cost: DetectionCost = DCF) -> float:
    """The least normalised detection cost over the ROC's points."""
    dcf = cost.c_miss * fnr * cost.p_target + cost.c_fa * fpr * (1 - cost.p_target)
    default = min(cost.c_miss * cost.p_target, cost.c_fa * (1 - cost.p_target))
    return float(np.min(dcf) / default)


def verification_metrics(score: Floats, target: Flags) -> dict[str, float]:
    """``eer``, ``min_dcf`` and the trial counts of trial ``score``s against ``target``."""
    targets = int(np.count_nonzero(target))
    if targets == 0 or targets == len(target):
        kind = "non-target" if targets == 0 else "target"
        raise UndefinedMetric(
            metric="eer",
            reason=f"every trial is a {kind} trial: the error rates need trials of one speaker "
            "(label 1) and of two (label 0)",
        )
    fpr, fnr = roc(score, target)
    return {
        "eer": equal_error_rate(fpr, fnr),
        "min_dcf": min_detection_cost(fpr, fnr),
        "trials_count": float(len(target)),
        "target_trials_count": float(targets),
    }
