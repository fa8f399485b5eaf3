"""Sentence pairs with gold similarity scores (``labels.format: similarity-pairs``), and the
metric their community uses: Spearman's rank correlation between the gold scores and the
cosine similarity of the model's embeddings of the two sentences (as STS benchmarks and
sentence-transformers' evaluators report it).

The labels file is tab-separated, one pair per line: ``i<TAB>j<TAB>score``, where ``i`` and
``j`` are sample indexes (0-based lines of the text samples) and ``score`` a number; a first
line ``i<TAB>j<TAB>score`` is a header and skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.evaluator.labels import LabelProblem, read_label_text

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Pairs:
    first: npt.NDArray[np.int64]
    second: npt.NDArray[np.int64]
    gold: FloatArray


def read_pairs(path: Path, *, where: str, count: int) -> Pairs:
    """The pairs of ``count`` samples; a malformed line, an index out of range or fewer than
    two pairs (no correlation) is refused."""
    rows: list[tuple[int, int, float]] = []
    for number, line in enumerate(read_label_text(path, where).splitlines(), start=1):
        if not line.strip() or (number == 1 and line.split("\t")[:2] == ["i", "j"]):
            continue
        fields = line.split("\t")
        try:
            if len(fields) != 3:
                raise ValueError(f"{len(fields)} fields")
            i, j, score = int(fields[0]), int(fields[1]), float(fields[2])
        except ValueError as exc:
            raise LabelProblem(
                path=where, reason=f"line {number}: want i<TAB>j<TAB>score ({exc})"
            ) from None
        for index in (i, j):
            if not 0 <= index < count:
                raise LabelProblem(
                    path=where, reason=f"line {number}: sample {index} is not one of 0..{count - 1}"
                )
        if not math.isfinite(score):
            raise LabelProblem(path=where, reason=f"line {number}: score {fields[2]} is not finite")
        rows.append((i, j, score))
    if len(rows) < 2:
        raise LabelProblem(path=where, reason=f"{len(rows)} pairs: a correlation needs two or more")
    first, second, gold = zip(*rows, strict=True)
    return Pairs(
        np.array(first, dtype=np.int64),
        np.array(second, dtype=np.int64),
        np.array(gold, dtype=np.float64),
    )


def ranks(x: FloatArray) -> FloatArray:
    """1-based ranks, ties given the mean of the ranks they span (as scipy's ``rankdata``)."""
    order = np.argsort(x, kind="stable")
    ranked = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    start = 0
    while start < len(x):
        end = start + 1
        while end < len(x) and sorted_x[end] == sorted_x[start]:
            end += 1
        ranked[order[start:end]] = (start + end + 1) / 2  # mean of ranks start+1 .. end
        start = end
    return ranked


def spearman(x: FloatArray, y: FloatArray) -> float:
    """Spearman's rho: Pearson's correlation of the ranks; NaN when either side is constant."""
    rx, ry = ranks(x), ranks(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    return float(dx @ dy) / denominator if denominator else math.nan


def similarity_metrics(embeddings: FloatArray, pairs: Pairs) -> dict[str, float]:
    """Cosine similarity of each pair's embeddings against the gold scores."""
    norms = np.linalg.norm(embeddings, axis=1)
    unit = embeddings / np.where(norms == 0, 1.0, norms)[:, None]
    cosine = np.sum(unit[pairs.first] * unit[pairs.second], axis=1)
    return {
        "spearman": spearman(cosine.astype(np.float64), pairs.gold),
        "pairs_count": float(len(pairs.gold)),
    }
