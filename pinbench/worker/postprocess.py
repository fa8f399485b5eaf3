"""Post-processing from a manifest's output steps: softmax, pooling, L2 normalisation, and
the exact ranking ``argsort`` and ``topk`` give (``ranked``)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.registry.steps import (
    OutputStep,
    Pool,
)
from pinbench.worker.pipeline_errors import Array, FloatArray, PipelineError


def softmax(x: FloatArray, axis: int = -1) -> FloatArray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    out: FloatArray = e / np.sum(e, axis=axis, keepdims=True)
    return out


def pool(x: Array, step: Pool, inputs: dict[str, Array]) -> FloatArray:
    """Token states ``(N, T, D)`` to ``(N, D)``: the mean over the tokens the mask keeps (the
    mask input, ``(N, T)`` of 0/1), or the first token's state."""
    if x.ndim != 3:
        raise PipelineError(step="pool", reason=f"expected (N, tokens, D) states, got {x.shape}")
    states = x.astype(np.float32)
    if step.mode == "cls":
        out: FloatArray = states[:, 0, :]
        return out
    assert step.mask is not None
    mask = inputs[step.mask].astype(np.float32)
    if mask.shape != states.shape[:2]:
        raise PipelineError(
            step="pool",
            reason=f"mask {step.mask!r} has shape {list(mask.shape)}, the states "
            f"{list(states.shape)}",
        )
    if not np.isin(mask, (0.0, 1.0)).all() or (mask.sum(axis=1) == 0).any():
        raise PipelineError(
            step="pool",
            reason=f"mask {step.mask!r} must be 0/1 with at least one kept token per sample "
            "(feed it the tokenizer's attention_mask)",
        )
    summed = np.einsum("ntd,nt->nd", states, mask)
    kept = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
    pooled: FloatArray = summed / kept
    return pooled


def ranked(x: Array, *, descending: bool = True) -> npt.NDArray[np.intp]:
    """Each row's indices along the last axis by value, highest first (``descending``) or
    lowest first; equal values keep their index order (the lower index first) either way.

    Compared in the values' own type, never cast: int64 scores above 2**53 are distinct
    integers a float64 would make equal (or reorder), and negating to sort descending would
    overflow the smallest integer. Descending is an ascending stable sort of each row
    reversed, read backwards."""
    if not descending:
        return np.argsort(x, axis=-1, kind="stable")
    width = x.shape[-1]
    order: npt.NDArray[np.intp] = (width - 1) - np.argsort(x[..., ::-1], axis=-1, kind="stable")[
        ..., ::-1
    ]
    return order


def l2_normalize(x: Array) -> FloatArray:
    values = x.astype(np.float32)
    norms = np.linalg.norm(values, axis=-1, keepdims=True)
    out: FloatArray = values / np.maximum(norms, 1e-12)
    return out


def postprocess(
    outputs: Array, steps: list[OutputStep], inputs: dict[str, Array] | None = None
) -> Array:
    """Apply output steps: to a ``(N, classes)`` array ``topk``/``argsort`` give class
    indices; ``pool`` (with the named mask among ``inputs``) and ``l2_normalize`` turn token
    states into sentence embeddings."""
    x = outputs
    for step in steps:
        if step.pool is not None:
            x = pool(x, step.pool, inputs or {})
        elif step.l2_normalize is not None:
            x = l2_normalize(x)
        elif step.softmax is not None:
            x = softmax(x.astype(np.float32), step.softmax.axis)
        elif step.argsort is not None:
            x = ranked(x, descending=step.argsort.descending)
        elif step.topk is not None:
            x = ranked(x)[..., : step.topk.k]
    return x
