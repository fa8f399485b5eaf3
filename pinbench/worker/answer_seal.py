"""A sample's answer sealed where the model gave it: 16 bytes of BLAKE2b over each output's
name, dtype, shape and bytes, in name order. A host-timed worker sends it with each answer
(``clock_wire``'s ``C`` frame), so that MLPerf's TEST01 can compare what the system under test
answered while it was timed with what it answers in accuracy mode (``runners.test01``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

SIZE = 16
NONE = bytes(SIZE)
"""The seal of no answer (the model failed or was stopped before it answered)."""


def seal(outputs: Mapping[Any, Any] | None) -> bytes:
    """The seal of one sample's outputs (a mapping of output name to array)."""
    if outputs is None:
        return NONE
    h = hashlib.blake2b(digest_size=SIZE)
    for name in sorted(outputs, key=str):
        array = np.ascontiguousarray(outputs[name])
        h.update(f"{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        h.update(array.data)
    return h.digest()
