"""The input tensors of an operator run: the same for every framework, from the spec's seed.

``numpy.random.default_rng(seed)`` draws float64 master copies in a fixed order (the
operator's inputs, then for ``backward`` the upstream gradient), which are rounded to the
dtype. Frameworks receive the rounded tensors and the reference computes in float64 on the
same rounded values, so a validation error measures the operator's arithmetic, not the
rounding of its inputs. NumPy has no bfloat16: bfloat16 tensors are carried as float32
arrays holding exactly representable bfloat16 values (round to nearest even), which a
framework casts to its own bfloat16 without a second rounding.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pinbench.specs.operators.schema import OPS
from pinbench.specs.operators.shapes import Shape, input_shapes, output_shape
from pinbench.specs.operators.spec import OperatorSpec

Array = npt.NDArray[np.floating]
F64 = npt.NDArray[np.float64]

CARRIER = {"float32": np.float32, "float16": np.float16, "bfloat16": np.float32}
"""The NumPy dtype a tensor of each dtype is handed over in."""


@dataclass(frozen=True, slots=True)
class OperatorInputs:
    """``tensors`` by input name in the operator's order, at the carrier dtype;
    ``upstream`` the gradient of the output for ``backward`` (else ``None``); ``digest``
    ``sha256:`` over their canonical bytes."""

    dtype: str
    tensors: dict[str, Array]
    upstream: Array | None
    digest: str

    def float64(self) -> dict[str, F64]:
        """The tensors as float64, exactly (what the reference computes on)."""
        return {name: t.astype(np.float64) for name, t in self.tensors.items()}


def round_bfloat16(x: F64) -> npt.NDArray[np.float32]:
    """``x`` rounded to the nearest bfloat16 (ties to even), held in float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    sixteen = np.uint64(16)
    bits = (bits + np.uint64(0x7FFF) + ((bits >> sixteen) & np.uint64(1))) >> sixteen << sixteen
    return bits.astype(np.uint32).view(np.float32)


def _draw(rng: np.random.Generator, op: str, name: str, shape: Shape) -> F64:
    if op == "batch_norm" and name == "var":
        return rng.uniform(0.5, 1.5, shape)  # a variance is positive
    if op in ("batch_norm", "layer_norm") and name in ("scale", "weight"):
        return rng.uniform(0.5, 1.5, shape)
    return rng.uniform(-1.0, 1.0, shape)


def _cast(x: F64, dtype: str) -> Array:
    if dtype == "bfloat16":
        return round_bfloat16(x)
    return x.astype(CARRIER[dtype])


def canonical_bytes(x: Array, dtype: str) -> bytes:
    """The tensor's elements at ``dtype``, little-endian, C order (bfloat16: its 16 bits)."""
    if dtype == "bfloat16":
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) >> 16
        return bits.astype("<u2").tobytes()
    return np.ascontiguousarray(x, dtype=np.dtype(CARRIER[dtype]).newbyteorder("<")).tobytes()


def generate(spec: OperatorSpec) -> OperatorInputs:
    """The inputs of ``spec`` (the same for a given op, shapes, dtype and seed; ``backward``
    adds the upstream gradient after them, so its inputs equal the forward's)."""
    rng = np.random.default_rng(spec.seed)
    shapes = input_shapes(spec.op, spec.params)
    tensors = {
        name: _cast(_draw(rng, spec.op, name, shape), spec.dtype) for name, shape in shapes.items()
    }
    upstream = None
    if spec.direction == "backward":
        out = output_shape(spec.op, spec.params)
        upstream = _cast(rng.uniform(-1.0, 1.0, out), spec.dtype)
    digest = hashlib.sha256()
    named = list(tensors.items()) + ([("upstream", upstream)] if upstream is not None else [])
    for name, tensor in named:
        header = f"{name}:{spec.dtype}:{','.join(map(str, tensor.shape))}\n"
        digest.update(header.encode())
        digest.update(canonical_bytes(tensor, spec.dtype))
    assert tuple(tensors) == OPS[spec.op].inputs
    return OperatorInputs(
        dtype=spec.dtype, tensors=tensors, upstream=upstream, digest="sha256:" + digest.hexdigest()
    )
