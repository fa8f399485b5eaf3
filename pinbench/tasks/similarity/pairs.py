"""Sentence pairs with gold similarity scores (``labels.format: similarity-pairs``), and the
metric their community uses: Spearman's rank correlation between the gold scores and the
cosine similarity of the model's embeddings of the two sentences (as STS benchmarks and
sentence-transformers' evaluators report it).

The labels file is tab-separated, one pair per line: ``i<TAB>j<TAB>score``, where ``i`` and
``j`` are sample indexes (0-based lines of the text samples) and ``score`` a number; a first
line ``i<TAB>j<TAB>score`` is a header and skipped. Lines split as every line-based file's
(``pinbench.worker.lines``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.worker.lines import LabelProblem, read_lines

FloatArray = npt.NDArray[np.float64]
_INDEX = re.compile(r"[0-9]{1,9}")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


@dataclass(frozen=True, slots=True)
class Pairs:
    first: npt.NDArray[np.int64]
    second: npt.NDArray[np.int64]
    gold: FloatArray


def read_pairs(path: Path, *, where: str, count: int) -> Pairs:
    """The pairs of ``count`` samples; a malformed line, an index out of range or fewer than
    two pairs (no correlation) is refused."""
    rows: list[tuple[int, int, float]] = []
    for number, line in enumerate(read_lines(path, where), start=1):
        if not line.strip() or (number == 1 and line.split("\t")[:2] == ["i", "j"]):
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not all(_INDEX.fullmatch(f) for f in fields[:2]):
            raise LabelProblem(
                path=where, reason=f"line {number}: want i<TAB>j<TAB>score (sample indexes)"
            )
        if not _NUMBER.fullmatch(fields[2]):
            raise LabelProblem(path=where, reason=f"line {number}: score {fields[2]!r}")
        i, j, score = int(fields[0]), int(fields[1]), float(fields[2])
        if i == j:
            raise LabelProblem(path=where, reason=f"line {number}: pairs sample {i} with itself")
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
    if len({score for _, _, score in rows}) < 2:
        raise LabelProblem(
            path=where, reason="every pair has the same gold score: a rank correlation is undefined"
        )
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


class SimilarityError(UserError):
    def __init__(self, *, reason: str) -> None:
        super().__init__(f"sentence similarity: {reason}")
        self.reason = reason


def similarity_metrics(embeddings: FloatArray, pairs: Pairs) -> dict[str, float]:
    """Cosine similarity of each pair's embeddings against the gold scores; embeddings that
    are not one finite vector per sample, or a correlation that is undefined, are errors (a
    NaN ranked as a value would give a plausible, meaningless rho)."""
    if embeddings.ndim != 2:
        raise SimilarityError(
            reason=f"the embedding output has shape {list(embeddings.shape)} after its steps; "
            "want one vector per sample (N, D): pool token states with a `pool` step"
        )
    bad = np.flatnonzero(~np.isfinite(embeddings).all(axis=1))
    if bad.size:
        raise SimilarityError(
            reason=f"{bad.size} samples have non-finite embeddings, e.g. sample {int(bad[0])}"
        )
    norms = np.linalg.norm(embeddings, axis=1)
    paired = np.concatenate([pairs.first, pairs.second])
    zero = paired[norms[paired] == 0]
    if zero.size:  # scikit-learn's normalize would call its cosine 0: a number it does not have
        raise SimilarityError(
            reason=f"sample {int(zero[0])}'s embedding is all zeros: the cosine similarity of "
            "its pairs is undefined"
        )
    unit = embeddings / np.where(norms == 0, 1.0, norms)[:, None]  # unpaired ones may be 0
    cosine = np.sum(unit[pairs.first] * unit[pairs.second], axis=1)
    rho = spearman(cosine.astype(np.float64), pairs.gold)
    if not math.isfinite(rho):
        raise SimilarityError(
            reason="every pair's cosine similarity is the same: a rank correlation is undefined"
        )
    return {"spearman": rho, "pairs_count": float(len(pairs.gold))}
