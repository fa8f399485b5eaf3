"""Post-processing from a manifest's output steps: softmax, pooling, L2 normalisation."""

from __future__ import annotations

import numpy as np

from pinbench.evaluator.pipeline_errors import Array, FloatArray, PipelineError
from pinbench.registry.steps import (
    OutputStep,
    Pool,
)


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
            xf = x.astype(np.float64)
            order = np.argsort(-xf if step.argsort.descending else xf, axis=-1, kind="stable")
            x = order
        elif step.topk is not None:
            x = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., : step.topk.k]
    return x
