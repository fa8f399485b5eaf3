"""A sample's answer sealed (``worker.answer_seal``): 16 bytes of BLAKE2b over each output's
name, dtype, shape and bytes, in name order, whatever the arrays' layout; held to the format
written out here, which the host and every worker share."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from pinbench.worker.answer_seal import NONE, seal


def _written_out(outputs: dict[Any, Any]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(outputs, key=str):
        array = np.ascontiguousarray(outputs[name])
        h.update(f"{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        h.update(array.data)
    return h.digest()


RNG = np.random.default_rng(84)
CASES: list[dict[Any, Any]] = [
    {"logits": np.zeros((1, 10), np.float32)},
    {"a": np.float32(3.0)},  # a scalar: sealed as one element of shape (1,)
    {"a": np.array(2.5)},  # 0-d
    {"b": RNG.random((3, 4)).T, "a": [1, 2, 3]},  # a transposed view, a list
    {1: np.arange(5), "x": np.zeros((0, 3))},  # a key that is not a string, an empty array
    {"z": RNG.random((2, 2, 2))[:, ::2]},  # a strided view
    {"big": RNG.integers(0, 255, (64, 64), dtype=np.uint8), "Big": np.ones(3, ">f4")},
]


@pytest.mark.parametrize("outputs", CASES)
def test_a_seal_is_the_format_written_out_whatever_the_layout(outputs: dict[Any, Any]) -> None:
    assert seal(outputs) == _written_out(outputs)
    assert seal(outputs) == _written_out(outputs)  # a second time, its header remembered


def test_the_seal_of_no_answer_is_zeros_and_any_change_changes_a_seal() -> None:
    assert seal(None) == NONE == bytes(16)
    base = {"logits": np.zeros((1, 10), np.float32)}
    changed: list[dict[str, Any]] = [
        {"logits": np.zeros((1, 10), np.float64)},
        {"logits": np.zeros((10, 1), np.float32)},
        {"logit": np.zeros((1, 10), np.float32)},
        {"logits": np.eye(1, 10, dtype=np.float32)},
    ]
    assert len({seal(base), *(seal(c) for c in changed)}) == 1 + len(changed)
