"""The steps that shape a sample's rows, on a whole dataset's samples ``(N, ...)``: ``take``,
``reshape`` and ``views`` (``registry.row_steps``). ``views`` is an input's last step: its
result is ``(N, k, ...)``, each sample's ``k`` views, which ``worker.views.Viewed`` lays out as
the model's rows at each call."""

from __future__ import annotations

import math

import numpy as np

from pinbench.registry.row_steps import Reshape, Take, ViewCrop, ViewOp, Views
from pinbench.worker.pipeline_errors import Array, PipelineError


def take(x: Array, step: Take) -> Array:
    """Positions ``[start, stop)`` of each sample's last axis."""
    if x.ndim < 2 or x.shape[-1] < step.stop:
        raise PipelineError(
            step="take",
            reason=f"takes [{step.start}, {step.stop}) of each sample's last axis; the samples "
            f"here are {list(x.shape[1:])}",
        )
    return x[..., step.start : step.stop]


def reshape(x: Array, step: Reshape) -> Array:
    """Each sample to ``shape``, its values in C order."""
    have = math.prod(x.shape[1:])
    if have != math.prod(step.shape):
        raise PipelineError(
            step="reshape",
            reason=f"{list(x.shape[1:])} per sample ({have} values) cannot be {step.shape} "
            f"({math.prod(step.shape)} values)",
        )
    return np.ascontiguousarray(x).reshape(x.shape[0], *step.shape)


MAX_VIEW_VALUES = 1 << 29
"""The most values an input's views may hold together (2 GiB of float32; ``stream``'s windows
are bounded alike): every sample's ``k`` views are kept for the run."""


def check_kept(values: int, samples: int) -> None:
    """Views of ``samples`` samples holding ``values`` values (so far) fit what a run keeps."""
    if values > MAX_VIEW_VALUES:
        raise PipelineError(
            step="views",
            reason=f"the views of {samples} samples hold {values} values or more, over the "
            f"{MAX_VIEW_VALUES} kept for a run: fewer views, or a smaller dataset "
            "(scenario.sample_count)",
        )


def views(x: Array, step: Views) -> Array:
    """Each sample's ``k`` views, stacked after the batch axis: ``(N, k, ...)``."""
    made: list[Array] = []
    for i, ops in enumerate(step.transforms):  # a view is at most its sample's size
        check_kept(sum(v.size for v in made) + x.size, x.shape[0])
        made.append(_view(x, ops, i))
    check_kept(sum(v.size for v in made), x.shape[0])
    shapes = {v.shape for v in made}
    if len(shapes) > 1:
        listed = ", ".join(f"view {i}: {list(v.shape[1:])}" for i, v in enumerate(made))
        raise PipelineError(
            step="views", reason=f"views must all have one shape, the model's row ({listed})"
        )
    return np.stack(made, axis=1)


def _view(x: Array, ops: list[ViewOp], index: int) -> Array:
    rank = x.ndim - 1
    for op in ops:
        if op.negate is not None:
            if x.dtype.kind not in "fi":
                raise PipelineError(
                    step="views",
                    reason=f"view {index} negates {x.dtype.name} values: only signed integers "
                    "and floats have negatives",
                )
            least = int(np.iinfo(x.dtype.name).min) if x.dtype.kind == "i" else None
            if least is not None and bool(np.any(x == least)):
                raise PipelineError(
                    step="views",
                    reason=f"view {index} negates {least}, which {x.dtype.name} cannot hold "
                    "negated: cast the samples first (a dtype step)",
                )
            x = np.negative(x)
        elif op.flip is not None:
            axis = op.flip.axis
            if not -rank <= axis < rank:
                raise PipelineError(
                    step="views",
                    reason=f"view {index} flips axis {axis} of a sample of {rank} axes "
                    f"({list(x.shape[1:])})",
                )
            x = np.flip(x, axis + 1 if axis >= 0 else axis)
        else:
            assert op.crop is not None
            x = _crop(x, op.crop, index)
    return np.ascontiguousarray(x)


def _crop(x: Array, crop: ViewCrop, index: int) -> Array:
    if x.ndim < 3:
        raise PipelineError(
            step="views",
            reason=f"view {index} crops a sample's last two axes; it has {x.ndim - 1}",
        )
    height, width = x.shape[-2:]
    h, w = crop.size
    if h > height or w > width:
        raise PipelineError(
            step="views",
            reason=f"view {index} crops {h}x{w} out of {height}x{width}",
        )
    if crop.at == "center":  # torchvision's CenterCrop: int(round((H - h) / 2.0))
        top, left = round((height - h) / 2.0), round((width - w) / 2.0)
    else:
        top = 0 if crop.at.startswith("top") else height - h
        left = 0 if crop.at.endswith("left") else width - w
    return x[..., top : top + h, left : left + w]
