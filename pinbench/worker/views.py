"""Test-time augmentation at the call (``registry.row_steps``): a batch of ``B`` samples is
fed as ``k * B`` rows, and each output's rows become one answer per sample again.

Preprocessing (untimed) made each input with a ``views`` step ``(N, k, ...)``: every sample's
``k`` views. At each call (timed, like the rest of answering a query) the batch's views are
laid out as the model's rows in the declared order, ``view-major`` (row ``v * B + s`` is view
``v`` of sample ``s``: ICLabel's layout) or ``sample-major`` (row ``s * k + v``); an input
without views is repeated so that each row has its sample's value. Each output is then
reduced by its ``views``: ``mean`` or ``max`` over its ``k`` rows per sample (element by
element; the mean in the output's own float type, as NumPy's ``mean`` computes it), or
``model``: the model answered ``B`` rows itself, checked at the first call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.ports import Input, Output
from pinbench.registry.row_rules import views_of
from pinbench.worker import stream
from pinbench.worker.named import NamedInputs
from pinbench.worker.predictors.base import Batch, Outputs, Predictor
from pinbench.worker.predictors.wrapping import Wrapping

Array = np.ndarray


class ViewsError(UserError):
    """An output whose rows do not match the views' rows, or that cannot be reduced."""

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(f"output {name!r}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Plan:
    k: int
    view_major: bool
    viewed: frozenset[str]
    """The inputs whose arrays hold ``k`` views per sample."""
    reduce: dict[str, str]
    """Each output's key and its ``views``: mean, max or model."""


def plan_of(inputs: Sequence[Input], outputs: Sequence[Output]) -> Plan | None:
    """The views of a model's inputs, or None where it has none."""
    found = {str(i.name): v for i in inputs if (v := views_of(i)) is not None}
    if not found:
        return None
    first = next(iter(found.values()))
    reduce = {str(o.name): str(o.views) for o in outputs}
    return Plan(len(first.transforms), first.order == "view-major", frozenset(found), reduce)


class Viewed(Wrapping):
    """A predictor whose model takes each sample as ``k`` rows (see the module's docstring)."""

    NAME: ClassVar[str] = "viewed"
    TITLE: ClassVar[str] = "test-time views"

    def __init__(self, inner: Predictor, plan: Plan) -> None:
        super().__init__(inner)
        self.plan = plan

    def check_input(self, batch: Batch) -> None:
        self.inner.check_input(self._rows(batch))

    def first_predict(self, batch: Batch) -> Outputs:
        return self._reduced(self.inner.first_predict(self._rows(batch)), len(batch))

    def predict(self, batch: Batch) -> Outputs:
        return self._reduced(self.inner.predict(self._rows(batch)), len(batch))

    def _rows(self, batch: Batch) -> Batch:
        plan = self.plan
        if not isinstance(batch, NamedInputs):
            assert len(plan.viewed) == 1  # one input fed per sample: the one with views
            return _laid_out(batch, plan.k, plan.view_major)
        rows = {}
        for name, a in batch.arrays.items():
            if name in plan.viewed:
                rows[name] = _laid_out(a, plan.k, plan.view_major)
            elif plan.view_major:
                rows[name] = np.concatenate([a] * plan.k)
            else:
                rows[name] = np.repeat(a, plan.k, axis=0)
        return NamedInputs(rows)

    def _reduced(self, got: Outputs, samples: int) -> Outputs:
        plan = self.plan
        out: Outputs = {}
        for key, value in got.items():
            how = plan.reduce.get(key, "model")
            shape = list(np.shape(value))
            if how == "model":
                if not shape or shape[0] != samples:
                    raise ViewsError(
                        name=key,
                        reason=f"`views: model` says the model answers one row per sample, but "
                        f"it answered {shape} for {samples} samples ({plan.k * samples} rows)",
                    )
                out[key] = value
                continue
            if not shape or shape[0] != plan.k * samples:
                raise ViewsError(
                    name=key,
                    reason=f"`views: {how}` reduces {plan.k} rows per sample, but the model "
                    f"answered {shape} for {plan.k * samples} rows ({samples} samples); if it "
                    "reduces them itself, say `views: model`",
                )
            a = np.asarray(value)
            if a.dtype.kind not in "fiu" or (how == "mean" and a.dtype.kind != "f"):
                raise ViewsError(
                    name=key, reason=f"`views: {how}` of {a.dtype.name} answers: say `views: model`"
                )
            if plan.view_major:
                split = a.reshape(plan.k, samples, *a.shape[1:])
                out[key] = split.mean(0) if how == "mean" else split.max(0)
            else:
                split = a.reshape(samples, plan.k, *a.shape[1:])
                out[key] = split.mean(1) if how == "mean" else split.max(1)
        return out


def _laid_out(a: Array, k: int, view_major: bool) -> Array:
    """``(B, k, ...)`` views as ``k * B`` model rows in the declared order."""
    if view_major:
        return np.ascontiguousarray(a.swapaxes(0, 1)).reshape(k * a.shape[0], *a.shape[2:])
    return a.reshape(a.shape[0] * k, *a.shape[2:])


def wrap(
    predictor: Predictor,
    inputs: Sequence[Input],
    windows: Array | None,
    outputs: Sequence[Output] = (),
) -> Predictor:
    """``predictor`` as a run calls it: itself where every input is fed per sample, else a
    ``stream.Fed`` around it (constants, states, a stream); and where inputs have views, a
    ``Viewed`` around that."""
    fed = stream.plan_of(inputs)
    inner = predictor if fed is None else stream.Fed(predictor, fed, windows)
    plan = plan_of(inputs, outputs)
    return inner if plan is None else Viewed(inner, plan)
