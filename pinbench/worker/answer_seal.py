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


_HEADERS: dict[tuple[Any, Any, tuple[int, ...]], bytes] = {}
"""Each output's header (name, dtype, shape) as the seal hashes it, made once: most of a seal's
cost where outputs are small (5.1 µs a seal of ten logits, 1.1 µs of it the header's text)."""
_HASHED: dict[tuple[Any, Any, tuple[int, ...]], Any] = {}
"""A one-output seal's hash with its header already taken, copied for each answer: a copy
costs less than a new hash (a seal of ten logits 0.82 to 0.31 µs on this project's machine,
2026-12-01)."""
HEADERS_KEPT = 4096


def seal(outputs: Mapping[Any, Any] | None) -> bytes:
    """The seal of one sample's outputs (a mapping of output name to array)."""
    if outputs is None:
        return NONE
    if len(outputs) == 1:  # the hot path: one output (the same bytes hashed as below)
        for name, array in outputs.items():
            if type(array) is np.ndarray and array.ndim:  # 0-d: sealed as shape (1,), below
                key = (name, array.dtype, array.shape)
                hashed = _HASHED.get(key)
                if hashed is None:
                    hashed = hashlib.blake2b(_head(name, array), digest_size=SIZE)
                    if len(_HASHED) < HEADERS_KEPT:
                        _HASHED[key] = hashed
                h = hashed.copy()
                try:
                    h.update(array.data)  # its bytes, where they are C-contiguous
                except BufferError:
                    break  # another layout: made contiguous, below
                return h.digest()
    h = hashlib.blake2b(digest_size=SIZE)
    for name in sorted(outputs, key=str):
        array = outputs[name]
        if not (isinstance(array, np.ndarray) and array.ndim and array.flags.c_contiguous):
            array = np.ascontiguousarray(array)  # as it is, where it already is one
        h.update(_head(name, array))
        h.update(array.data)
    return h.digest()


def _head(name: Any, array: np.ndarray) -> bytes:
    """An output's header: its name, dtype and shape, made once per kind of output."""
    key = (name, array.dtype, array.shape)
    head = _HEADERS.get(key)
    if head is None:
        head = f"{name}\0{array.dtype.str}\0{array.shape}\0".encode()
        if len(_HEADERS) < HEADERS_KEPT:
            _HEADERS[key] = head
    return head
