"""Classification parity: the class each sample's scores rank first, in both runs, and how far
the scores themselves moved (``runs parity``)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.tasks.parity import (
    Agreement,
    Figure,
    Incomparable,
    Recorded,
    difference_figures,
    same_samples,
    tensor_difference,
)


def class_scores_of(recorded: Recorded) -> npt.NDArray[np.float64]:
    """The recorded scores as one row per sample (the recorded output was checked to be one
    score per class when it was scored)."""
    x = np.asarray(recorded.outputs, dtype=np.float64)
    return x.reshape(len(x), -1)


def top1(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Each row's top-1 class as scoring ranks it: the highest score, the lowest index on a
    tie (a stable sort, as ``scores.classification_metrics``)."""
    if not scores.size:
        return np.empty(len(scores), dtype=np.intp)
    return np.argsort(-scores, axis=1, kind="stable")[:, 0]


def class_parity(reference: Recorded, other: Recorded) -> Agreement:
    """How many samples have the same top-1 class in both runs, out of how many, and the max
    absolute and relative difference of their scores; the runs agree when every sample's
    top-1 is the same."""
    ref, out = class_scores_of(reference), class_scores_of(other)
    same_samples(ref, out, run=other.run)
    if ref.shape[1] != out.shape[1]:
        raise Incomparable(
            run=other.run,
            reason=f"it scores {out.shape[1]} classes, the reference {ref.shape[1]}",
        )
    abs_diff, rel_diff = tensor_difference(ref, out, run=other.run)
    same = int(np.sum(top1(ref) == top1(out)))
    return Agreement(
        (
            Figure("top1_agree", "same top-1", float(same), "count"),
            Figure("samples", "samples", float(len(ref)), "count"),
            *difference_figures(abs_diff, rel_diff),
        ),
        same == len(ref),
        "every sample's top-1 class the same",
    )
