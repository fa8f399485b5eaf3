"""The error of a transformed network against the untransformed one, and its tolerance.

``compare`` takes the two networks' outputs (inference) or weights (training) as arrays in
the same order and states: ``max_abs_err`` = max |t - r|; ``max_rel_err`` = max |t - r| / |r|
over the elements whose reference is not 0 (None when every reference element is 0: a
relative error is undefined there, never a 0.0, and ``max_abs_err`` covers them); ``l2_err``
= ||t - r||_2; ``rel_l2_err`` = ||t - r||_2 / ||r||_2 (None when ||r||_2 is 0). Comparing no
numbers at all is refused. The run is valid when every
element holds ``|t - r| <= atol + rtol * |r|`` (NumPy's ``allclose``) with ``TOLERANCES``
for the dtype the networks computed in; a NaN or an infinity anywhere in either is invalid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Tolerance:
    """``|t - r| <= atol + rtol * |r|`` elementwise; ``why`` says where the numbers come from."""

    rtol: float
    atol: float
    why: str


TOLERANCES: Final[dict[str, Tolerance]] = {
    "float64": Tolerance(1e-9, 1e-12, "summation order only: a few ulps of float64"),
    "float32": Tolerance(
        1e-4, 1e-5, "summation order and fused kernels: float32's 2^-23 ulp grown over a network"
    ),
    "float16": Tolerance(1e-2, 1e-3, "float16's 2^-10 ulp grown over a network"),
    "bfloat16": Tolerance(5e-2, 1e-2, "bfloat16's 2^-7 ulp grown over a network"),
}


class Comparison(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One transformed-vs-untransformed comparison over ``elements`` numbers in ``dtype``."""

    dtype: str
    elements: int
    max_abs_err: float
    max_rel_err: float | None
    l2_err: float
    rel_l2_err: float | None
    rtol: float
    atol: float
    valid: bool

    def errors(self) -> str:
        """``max abs err A, max rel err R, L2 err L`` (R ``undefined`` where it is)."""
        rel = "undefined" if self.max_rel_err is None else f"{self.max_rel_err:.3g}"
        return f"max abs err {self.max_abs_err:.3g}, max rel err {rel}, L2 err {self.l2_err:.3g}"

    def reason(self) -> str | None:
        """The failed run's error when outside the tolerance, else None."""
        if self.valid:
            return None
        return (
            f"outside tolerance: {self.errors()} over {self.elements} {self.dtype} "
            f"values (allowed |t - r| <= {self.atol:g} + {self.rtol:g} * |r|)"
        )


def compare(
    transformed: Sequence[npt.NDArray[Any]], reference: Sequence[npt.NDArray[Any]], *, dtype: str
) -> Comparison:
    """The error of ``transformed`` against ``reference``, array by array (same shapes)."""
    if dtype not in TOLERANCES:
        raise ValueError(f"no tolerance for dtype {dtype!r}; known: {', '.join(TOLERANCES)}")
    if len(transformed) != len(reference):
        raise ValueError(f"{len(transformed)} arrays compared with {len(reference)}")
    for i, (t, r) in enumerate(zip(transformed, reference, strict=True)):
        if t.shape != r.shape:
            raise ValueError(f"array {i}: shape {t.shape} compared with {r.shape}")
    t64 = _flat(transformed)
    r64 = _flat(reference)
    if t64.size == 0:
        raise ValueError("no values to compare")
    tol = TOLERANCES[dtype]
    finite = bool(np.isfinite(t64).all() and np.isfinite(r64).all())
    diff = np.abs(t64 - r64)
    nonzero = r64 != 0
    l2 = float(np.linalg.norm(t64 - r64))
    norm = float(np.linalg.norm(r64))
    return Comparison(
        dtype=dtype,
        elements=int(t64.size),
        max_abs_err=float(diff.max()),
        max_rel_err=float((diff[nonzero] / np.abs(r64[nonzero])).max()) if nonzero.any() else None,
        l2_err=l2,
        rel_l2_err=l2 / norm if norm > 0 else None,
        rtol=tol.rtol,
        atol=tol.atol,
        valid=finite and bool((diff <= tol.atol + tol.rtol * np.abs(r64)).all()),
    )


def _flat(arrays: Sequence[npt.NDArray[Any]]) -> npt.NDArray[np.float64]:
    if not arrays:
        return np.zeros(0, np.float64)
    return np.concatenate([np.asarray(a, np.float64).ravel() for a in arrays])
