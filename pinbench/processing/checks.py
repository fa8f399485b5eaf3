"""What processing code gives, checked against what the manifest declares (issue 50 item 6):
a wrong declaration fails the run before anything is timed, naming the input or output.

``preprocess`` gives, for one sample, exactly the inputs fed from the samples, by name, each a
NumPy array of the input's ``element_type`` and (where declared) ``shape`` (no batch axis), the
same shape for every sample. ``postprocess`` gives, for one prediction, exactly the declared
outputs, by name, each a NumPy array of numbers (bool, integer or float) with the batch on axis
0, of one element type and one shape after the batch axis on every call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.ports import Input, Output

Array = npt.NDArray[np.generic]
NUMBERS = "biuf"
"""The dtype kinds a post-processed output may have: what a task scores."""


class CodeOutputMismatch(UserError):
    """Processing code gave something other than what the manifest declares."""

    def __init__(self, *, role: str, where: str, name: str, reason: str) -> None:
        side = "input" if role == "preprocess" else "output"
        super().__init__(
            f"{role} ({where}) {side} {name!r} {reason}: the code must give what the manifest "
            f"declares (fix the code or the declared {side}s)"
        )
        self.role = role
        self.where = where
        self.name = name
        self.reason = reason


def _names(
    got: object, declared: Sequence[str], role: str, where: str, on: str
) -> Mapping[str, Any]:
    """``got`` as a mapping with exactly the ``declared`` keys, else a mismatch naming the
    first missing or extra one."""
    if not isinstance(got, Mapping):
        raise CodeOutputMismatch(
            role=role,
            where=where,
            name="(all)",
            reason=f"{on}: the code returned a {type(got).__name__}, not a dict of name -> "
            "numpy array",
        )
    keys = [str(k) for k in got]
    missing = [n for n in declared if n not in keys]
    if missing:
        raise CodeOutputMismatch(
            role=role,
            where=where,
            name=missing[0],
            reason=f"is missing {on} (the code gave {', '.join(map(repr, keys)) or 'nothing'})",
        )
    extra = [k for k in keys if k not in declared]
    if extra:
        side = "inputs" if role == "preprocess" else "outputs"
        raise CodeOutputMismatch(
            role=role,
            where=where,
            name=extra[0],
            reason=f"is not declared ({on}; declared {side}: {', '.join(map(repr, declared))})",
        )
    return {str(k): v for k, v in got.items()}


def _array(value: object, role: str, where: str, name: str, on: str) -> Array:
    if not isinstance(value, np.ndarray):
        raise CodeOutputMismatch(
            role=role,
            where=where,
            name=name,
            reason=f"is a {type(value).__name__} {on}, not a numpy array",
        )
    return value


def check_inputs(got: object, specs: Sequence[Input], where: str, sample: str) -> dict[str, Array]:
    """One sample's inputs from ``preprocess``, checked (module docstring)."""
    on = f"for sample {sample}"
    found = _names(got, [str(s.name) for s in specs], "preprocess", where, on)
    out = {}
    for spec in specs:
        name = str(spec.name)
        array = _array(found[name], "preprocess", where, name, on)
        if array.dtype != np.dtype(spec.element_type):
            raise CodeOutputMismatch(
                role="preprocess",
                where=where,
                name=name,
                reason=f"has dtype {array.dtype} {on}, the manifest declares element_type "
                f"{spec.element_type}",
            )
        if spec.shape and list(array.shape) != list(spec.shape):
            raise CodeOutputMismatch(
                role="preprocess",
                where=where,
                name=name,
                reason=f"has shape {list(array.shape)} {on}, the manifest declares shape "
                f"{list(spec.shape)} (one sample: no batch axis)",
            )
        out[name] = array
    return out


def check_same_shape(
    where: str, name: str, first: tuple[str, Array], this: tuple[str, Array]
) -> None:
    """Samples are stacked: every sample's input has the first one's shape."""
    if first[1].shape != this[1].shape:
        raise CodeOutputMismatch(
            role="preprocess",
            where=where,
            name=name,
            reason=f"has shape {list(this[1].shape)} for sample {this[0]} and "
            f"{list(first[1].shape)} for sample {first[0]}: samples are stacked, so give "
            "every sample one shape (or declare `shape`)",
        )


Signature = dict[str, tuple[tuple[int, ...], np.dtype[Any]]]
"""Each output's shape after the batch axis and its element type."""


def check_outputs(
    got: object,
    declared: Sequence[Output],
    where: str,
    *,
    batch: int,
    first: Signature | None = None,
    on: str = "for the first prediction",
) -> tuple[dict[str, Array], Signature]:
    """One prediction's outputs from ``postprocess``, checked (module docstring) against the
    declared outputs and, after the first call, against the first call's ``Signature``."""
    names = [str(o.name) for o in declared]
    found = _names(got, names, "postprocess", where, on)
    out: dict[str, Array] = {}
    signature: Signature = {}
    for name in names:
        array = _array(found[name], "postprocess", where, name, on)
        problem = None
        if array.dtype.kind not in NUMBERS:
            problem = f"has dtype {array.dtype} {on}: a task scores numbers (bool, int, float)"
        elif array.ndim == 0 or array.shape[0] != batch:
            problem = (
                f"has shape {list(array.shape)} {on}: its first axis must be the batch's {batch}"
            )
        elif first is not None and (array.shape[1:], array.dtype) != first[name]:
            was_shape, was_dtype = first[name]
            problem = (
                f"is {array.dtype} of shape {list(array.shape)} {on}, {was_dtype} of shape "
                f"{[batch, *was_shape]} for the first: every prediction's output has one "
                "element type and one shape"
            )
        if problem is not None:
            raise CodeOutputMismatch(role="postprocess", where=where, name=name, reason=problem)
        out[name] = array
        signature[name] = (array.shape[1:], array.dtype)
    return out, signature
