"""The declared inputs bound to a model's own, once at ``open``, and a batch's arrays for them:
one array for a model of one input, a ``NamedInputs`` (an array per declared name) for any
number. Every predictor feeds through this, so several inputs mean the same on each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.ports import Input
from pinbench.worker.named import NamedInputs
from pinbench.worker.predictors.base import Array, Batch, InputMismatch, Port, bind_inputs


class ManyInputs(UserError):
    """One array handed to a model of several inputs (they come as ``NamedInputs``)."""

    def __init__(self, *, names: list[str]) -> None:
        super().__init__(
            f"the model takes {len(names)} inputs ({', '.join(names)}) and was handed one "
            "array: each declared input is fed its own array, by its name"
        )
        self.names = names


@dataclass(frozen=True, slots=True)
class Feeds:
    """Each declared input's key in a ``NamedInputs`` batch (its manifest name, ``str`` of an
    index) and the model's input it feeds, in manifest order (``base.bind_inputs``: by the
    model's own names or indexes, never by position alone)."""

    keys: tuple[str, ...]
    ports: tuple[Port, ...]

    @classmethod
    def bind(cls, declared: Sequence[Input], ports: Sequence[Port]) -> Feeds:
        """``SignatureMismatch`` unless every model input is declared once and every declared
        input is the model's."""
        bound = bind_inputs(declared, ports)
        keys = [str(d.name) for d in declared] or [p.name for p in bound]
        return cls(tuple(keys), tuple(bound))

    def order(self, ports: Sequence[Port]) -> list[int]:
        """For each of ``ports`` (the model's inputs in the order it takes them), the index of
        the declared input that feeds it."""
        return [self.ports.index(p) for p in ports]

    def arrays(self, batch: Batch) -> list[Array]:
        """The batch's array for each declared input, in manifest order."""
        if isinstance(batch, NamedInputs):
            return [batch.arrays[k] for k in self.keys]
        if len(self.keys) != 1:
            raise ManyInputs(names=[p.name for p in self.ports])
        return [batch]

    def check(self, batch: Batch) -> None:
        """``InputMismatch`` for the first array whose element type or shape the model cannot
        take, where the model tells them (a dimension that is not an int fits any size)."""
        if isinstance(batch, NamedInputs):
            missing = [k for k in self.keys if k not in batch.arrays]
            if missing:
                raise InputMismatch(
                    name=missing[0],
                    expected=f"an array for each of {list(self.keys)}",
                    actual=f"arrays for {list(batch.arrays)}",
                )
        for port, array in zip(self.ports, self.arrays(batch), strict=True):
            _check(port, array)


def _check(port: Port, array: Array) -> None:
    dtype = _numpy(port.dtype)
    fits = dtype is None or array.dtype == dtype
    if fits and port.shape is not None:
        fits = array.ndim == len(port.shape) and all(
            not isinstance(want, int) or want == got
            for want, got in zip(port.shape, array.shape, strict=True)
        )
    if not fits:
        element = dtype.name if dtype is not None else "any element type"
        shape = list(port.shape) if port.shape is not None else "any shape"
        raise InputMismatch(
            name=port.name,
            expected=f"{element} {shape}",
            actual=f"{array.dtype.name} {list(array.shape)}",
        )


def _numpy(name: str | None) -> np.dtype[Any] | None:
    """The NumPy element type of a model's element type name, None where NumPy has none."""
    if name is None:
        return None
    try:
        return np.dtype(name)
    except TypeError:
        return None
