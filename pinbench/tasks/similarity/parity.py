"""Sentence-similarity parity: each sample's embedding in one run against the other's (their
cosine similarity), and how far Spearman's rho moved (``runs parity``)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from pinbench.tasks.parity import Agreement, Figure, Incomparable, Recorded, same_samples

MIN_COSINE = 0.999
"""The least cosine similarity of a sample's two embeddings for the runs to agree."""
RHO = "spearman"
"""The recorded metric whose movement is a figure (``task.SentenceSimilarity.metrics``)."""
RHO_TOLERANCE = 1e-3
"""The most Spearman's rho may move for the runs to agree."""


def embeddings_of(recorded: Recorded) -> npt.NDArray[np.float64]:
    """The recorded embeddings (after the output's steps), one vector per sample."""
    return np.asarray(recorded.outputs, dtype=np.float64).reshape(len(recorded.outputs), -1)


def cosines(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Row by row cosine similarity; two all-zero rows are the same (1), an all-zero row
    against another is not (0); a non-finite row gives NaN."""
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    dot = np.sum(a * b, axis=1)
    both = (na > 0) & (nb > 0)
    out = np.where(both, dot / np.where(both, na * nb, 1.0), 0.0)
    out = np.where((na == 0) & (nb == 0), 1.0, out)
    return np.clip(out, -1.0, 1.0)


def embedding_parity(reference: Recorded, other: Recorded) -> Agreement:
    """Per sample the cosine similarity of its two embeddings (the least and the mean), and
    the absolute difference of the runs' Spearman's rho; the runs agree when every
    sample's cosine is at least ``MIN_COSINE`` and rho moved at most ``RHO_TOLERANCE``."""
    ref, out = embeddings_of(reference), embeddings_of(other)
    same_samples(ref, out, run=other.run)
    if ref.shape[1] != out.shape[1]:
        raise Incomparable(
            run=other.run,
            reason=f"embeddings of {out.shape[1]} values, the reference's of {ref.shape[1]}",
        )
    if not (np.isfinite(ref).all() and np.isfinite(out).all()):
        raise Incomparable(run=other.run, reason="an embedding holds a non-finite value")
    found = cosines(ref, out)
    least = float(found.min()) if found.size else 1.0
    mean = float(found.mean()) if found.size else 1.0
    moved = abs(other.metrics.get(RHO, math.nan) - reference.metrics.get(RHO, math.nan))
    return Agreement(
        (
            Figure("min_cosine", "min cosine", least, "fraction"),
            Figure("mean_cosine", "mean cosine", mean, "fraction"),
            Figure("spearman_diff", "Spearman diff", moved),
            Figure("samples", "samples", float(len(ref)), "count"),
        ),
        least >= MIN_COSINE and moved <= RHO_TOLERANCE,
        f"every embedding at cosine >= {MIN_COSINE:g} and Spearman within {RHO_TOLERANCE:g}",
    )
