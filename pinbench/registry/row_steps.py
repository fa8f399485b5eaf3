"""Input steps that shape a sample's rows: ``take`` (a range of the last axis), ``reshape``
(each sample to a shape) and ``views`` (test-time augmentation: one sample becomes ``k`` rows,
each its own transforms), the rule that ties ``views`` to the outputs (every output of a model
with views says how its ``k`` rows per sample become one answer, ``Output.views``) is
``input_kinds.check_views``.

A model whose inputs take several arrays from one sample (ICLabel's topographic map, power
spectrum and autocorrelation) reads them with ``take`` and ``reshape`` out of one row of
features; ICLabel's network takes each component as four rows (the map, its negation, its
left-right mirror, and both) and averages its four answers itself (``views: model``)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from pinbench import bounds as b
from pinbench.registry.manifest_parts import _Strict

Corner = Literal["center", "top_left", "top_right", "bottom_left", "bottom_right"]
VIEW_ORDERS = ("view-major", "sample-major")
REDUCTIONS = ("mean", "max", "model")
"""How an output's ``k`` rows per sample become one: their mean or maximum (element by element,
over the rows), or the model's own (it answers one row per sample)."""


class Take(_Strict, frozen=True, kw_only=True):
    """Positions ``[start, stop)`` of each sample's last axis (NumPy's ``x[..., start:stop]``);
    a sample shorter than ``stop`` is refused."""

    start: Annotated[int, b.TAKE_INDEX.meta] = 0
    stop: Annotated[int, b.TAKE_INDEX.meta]

    def __post_init__(self) -> None:
        if self.stop <= self.start:
            raise ValueError(f"take: stop {self.stop} must be above start {self.start}")


class Reshape(_Strict, frozen=True, kw_only=True):
    """Each sample to ``shape`` in C order (NumPy's ``reshape``): its values' count must be
    the shape's product, else it is refused naming both."""

    shape: Annotated[
        list[Annotated[int, b.DIMENSION.meta]],
        msgspec.Meta(min_length=b.RESHAPE_AXES.low, max_length=b.RESHAPE_AXES.high),
    ]


class Negate(_Strict, frozen=True, kw_only=True):
    """Every value times -1."""


class Flip(_Strict, frozen=True, kw_only=True):
    """The sample reversed along ``axis`` of its own axes (-1: the last, a W axis after
    ``layout: NCHW``)."""

    axis: Annotated[int, b.AXIS.meta]


class ViewCrop(_Strict, frozen=True, kw_only=True):
    """A ``size`` window of the sample's last two axes (height, width), at its centre (its top
    ``round((H - h) / 2)``, its left likewise, as torchvision's ``CenterCrop`` places it) or at
    a corner: torchvision's ``FiveCrop`` positions."""

    size: tuple[Annotated[int, b.PIXELS.meta], Annotated[int, b.PIXELS.meta]]
    at: Corner = "center"


class ViewOp(_Strict, frozen=True, kw_only=True, omit_defaults=True):
    """Exactly one of the fields."""

    negate: Negate | None = None
    flip: Flip | None = None
    crop: ViewCrop | None = None

    def __post_init__(self) -> None:
        chosen = [n for n in self.__struct_fields__ if getattr(self, n) is not None]
        if len(chosen) != 1:
            raise ValueError(
                f"a view's transform has exactly one of {', '.join(self.__struct_fields__)}; "
                f"got {chosen or 'none'}"
            )


class Views(_Strict, frozen=True, kw_only=True):
    """Each sample as ``k`` rows, row ``i`` the sample through ``transforms[i]`` in order (``[]``:
    the sample as it is). The input's last step. ``order`` is how a batch's rows reach the
    model: ``view-major`` (every sample's first view, then every sample's second, ... as
    ICLabel's network reads them) or ``sample-major`` (a sample's ``k`` views together)."""

    transforms: Annotated[
        list[Annotated[list[ViewOp], msgspec.Meta(max_length=b.VIEW_OPS.high)]],
        msgspec.Meta(min_length=b.VIEWS.low, max_length=b.VIEWS.high),
    ]
    order: Literal["view-major", "sample-major"]


class PadBatch(_Strict, frozen=True, kw_only=True):
    """Samples that keep lengths of their own (waveforms without ``fit_length``) batched as a
    pipeline batches them: each padded at the end of its last axis to the batch's longest with
    ``value``; at batch size 1 a sample is fed at its own length."""

    value: Annotated[float, b.NORMALIZE.meta] = 0.0
