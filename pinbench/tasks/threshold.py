"""Thresholds at equality: the one rule by which every task compares a model's scores with a
threshold its manifest declares (decision 276).

**A score is compared with its threshold in the precision of the model output it is read
from.** The threshold is rounded to that output's floating dtype, as NumPy's ``scores >= 0.7``
on the output array rounds the ``0.7``: a float32 score of 0.7 meets threshold 0.7 in every
task (``np.float32(0.7) >= 0.7`` is true in NumPy; ``float(np.float32(0.7)) >= 0.7``, the
comparison after a float64 cast, is not). A score pinbench computes from the output element by
element in float64 (a logit's sigmoid, objectness times a class's probability, a softmax) is
rounded to the output's precision first, as the same computation in that precision gives it
(exactly so for a product of two float32 values). An output of integers or booleans is
compared in float64, exact for every integer below 2**53. A NaN meets no threshold.

``at_least`` is ``>=``, ``above`` is ``>``; which one a threshold uses is its task's, as its
docs say: ``>=`` everywhere but a probability map's pixel ``threshold``, DBNet's
``pred > thresh`` (``detection.regions``). A probability map's ``box_threshold`` is compared
with a region's mean probability, a statistic PaddleOCR computes in float64 (``cv2.mean``),
so in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Flags = npt.NDArray[np.bool_]


def precision(dtype: npt.DTypeLike) -> np.dtype[Any]:
    """The dtype scores read from an output of ``dtype`` are compared in: the output's own
    floating dtype, else (integers, booleans) float64."""
    kind = np.dtype(dtype)
    return kind if np.issubdtype(kind, np.floating) else np.dtype(np.float64)


def _in_precision(
    scores: npt.ArrayLike, threshold: float, dtype: npt.DTypeLike | None
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    x = np.asarray(scores)
    kind = precision(x.dtype if dtype is None else dtype)
    with np.errstate(over="ignore"):  # past the precision's range is its infinity
        return x.astype(kind, copy=False), np.asarray(threshold, dtype=kind)


def at_least(
    scores: npt.ArrayLike, threshold: float, *, dtype: npt.DTypeLike | None = None
) -> Flags:
    """Where ``scores`` meet ``threshold`` (``>=``), compared in the precision of ``dtype``,
    the dtype of the output they are read from (by default the scores' own)."""
    x, t = _in_precision(scores, threshold, dtype)
    found: Flags = x >= t
    return found


def above(scores: npt.ArrayLike, threshold: float, *, dtype: npt.DTypeLike | None = None) -> Flags:
    """Where ``scores`` exceed ``threshold`` (``>``), compared as ``at_least`` compares."""
    x, t = _in_precision(scores, threshold, dtype)
    found: Flags = x > t
    return found
