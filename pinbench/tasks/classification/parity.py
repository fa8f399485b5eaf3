"""Classification parity: the class each sample's scores rank first, in both runs, and how far
the scores themselves moved (``runs parity``)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.tasks.classification.ranking import Ranking, ranked_classes, ranking_of
from pinbench.tasks.parity import (
    Agreement,
    Figure,
    Incomparable,
    Recorded,
    difference_figures,
    same_samples,
    tensor_difference,
)


def class_scores_of(recorded: Recorded) -> npt.NDArray[np.generic]:
    """The recorded scores as one row per sample, in their own type (the recorded output was
    checked to be one score per class when it was scored)."""
    x = np.asarray(recorded.outputs)
    return x.reshape(len(x), -1)


def ranking_recorded(recorded: Recorded) -> Ranking:
    """How the run ranked its recorded output's classes: as that output's steps declare
    (highest first where the record does not name its output)."""
    found = [o for o in recorded.model.outputs if str(o.name) == recorded.outputs_name]
    return ranking_of(found[0]) if found else Ranking()


def top1(scores: npt.NDArray[np.generic], ranking: Ranking | None = None) -> npt.NDArray[np.intp]:
    """Each row's top-1 class as scoring ranks it (``ranking``, by default the highest score),
    the lowest index on a tie, compared exactly (as ``scores.classification_metrics``)."""
    if not scores.size:
        return np.empty(len(scores), dtype=np.intp)
    return ranked_classes(scores, ranking or Ranking())[:, 0]


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
    same = int(np.sum(top1(ref, ranking_recorded(reference)) == top1(out, ranking_recorded(other))))
    return Agreement(
        (
            Figure("top1_agree", "same top-1", float(same), "count"),
            Figure("samples", "samples", float(len(ref)), "count"),
            *difference_figures(abs_diff, rel_diff),
        ),
        same == len(ref),
        "every sample's top-1 class the same",
    )
