"""The first samples of an accuracy run as rows a person can read: which file, its true class
and the predicted one, by name where the dataset gives class names (``details.samples``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pinbench.tasks.classification.ranking import Ranking, ranked_classes
from pinbench.tasks.classification.scores import HIGHEST_FIRST

if TYPE_CHECKING:
    from pinbench.worker.samples import Samples

SAMPLE_ROWS = 100
"""At most this many rows are kept: enough to see what a model does, small in the record."""


def sample_rows(
    samples: Samples,
    indexes: list[int],
    outputs: npt.NDArray[np.generic],
    ranking: Ranking = HIGHEST_FIRST,
) -> list[dict[str, Any]]:
    """One row per answered sample (the first ``SAMPLE_ROWS``): ``sample`` (the file's path in
    the dataset, or its index), ``truth`` and ``top1`` class indexes (``top1`` ranked as the
    metrics rank it), ``score`` (the top-1 output value, None when not finite), ``right`` (the
    top-1 is the true class) and, with class names, ``truth_name`` and ``top1_name`` (reports
    show the rows as recorded: ``run_samples.py``)."""
    assert samples.labels is not None
    scores = outputs.reshape(len(outputs), -1)[:SAMPLE_ROWS]
    best = ranked_classes(scores, ranking)[:, 0] if scores.size else np.empty(0, dtype=np.int64)
    names = samples.class_names
    rows = []
    for at, index in enumerate(indexes[:SAMPLE_ROWS]):
        truth, top1 = int(samples.labels[index]), int(best[at])
        row: dict[str, Any] = {
            "sample": samples.files[index].path if samples.files is not None else index,
            "truth": truth,
            "top1": top1,
            "score": _finite(scores[at, top1].item()),
            "right": truth == top1,
        }
        if names is not None:
            row["truth_name"] = names[truth] if truth < len(names) else None
            row["top1_name"] = names[top1] if top1 < len(names) else None
        rows.append(row)
    return rows


def _finite(value: float | int | bool) -> float | int | None:
    """The score as JSON: an integer exactly (int64 past 2**53 included), a float unless NaN
    or infinite (not JSON: recorded as None, shown as a dash)."""
    if isinstance(value, bool | int):
        return int(value)
    return value if math.isfinite(value) else None
