"""``artifacts.jsonsafe.load_json``: JSON from outside is read strictly and within bounds —
every refusal is a ``JsonRefused`` with the reason, never a ``RecursionError`` or a value two
readers would see differently."""

from __future__ import annotations

from typing import Any

import pytest

from pinbench.artifacts.jsonsafe import MAX_DEPTH, JsonRefused, depth_of, load_json

# (why, text, the reason's words)
REFUSED = [
    ("deeper than CPython's parser recurses", "[" * 100_000 + "]" * 100_000, "64 deep"),
    ("objects nested as deep", '{"a":' * 50_000 + "1" + "}" * 50_000, "64 deep"),
    ("unclosed and deep", "[" * 100_000, "64 deep"),
    ("one level past the bound", "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "64 deep"),
    ("a key twice (Python keeps the last)", '{"a": 1, "b": 2, "a": 3}', "key 'a' appears twice"),
    ("a key twice, deeper down", '[{"x": {"k": 1, "k": 1}}]', "key 'k' appears twice"),
    ("NaN", '{"area": NaN}', "NaN is not a JSON number"),
    ("Infinity", "[Infinity]", "Infinity is not a JSON number"),
    ("-Infinity", "[-Infinity]", "-Infinity is not a JSON number"),
    ("an integer of 5000 digits", "1" * 5000, "4300 digits"),
    ("not JSON", '{"a": }', "Expecting value: line 1 column 7"),
    ("trailing text", "[1] x", "Extra data"),
    ("bytes that are not UTF-8", b"\xff[]", "can't decode byte 0xff"),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_what_is_refused_says_why(text: str | bytes, message: str) -> None:
    with pytest.raises(JsonRefused) as caught:
        load_json(text)
    assert message in caught.value.reason
    assert str(caught.value).startswith("not JSON pinbench accepts: ")


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


# (text, its value)
ACCEPTED: list[tuple[str | bytes, Any]] = [
    ("[" * MAX_DEPTH + "]" * MAX_DEPTH, _nested(MAX_DEPTH)),
    ('{"a": [1, {"b": null}], "c": "[[[[[{{{{"}', {"a": [1, {"b": None}], "c": "[[[[[{{{{"}),
    ('{"a": 1, "A": 2}', {"a": 1, "A": 2}),  # keys differ in case: two keys
    (b'{"x": 1e308}', {"x": 1e308}),
    ('"\\u00e9"', "é"),
]


@pytest.mark.parametrize(("text", "value"), ACCEPTED)
def test_what_is_accepted_reads_as_json_loads_reads_it(text: str | bytes, value: Any) -> None:
    assert load_json(text) == value


@pytest.mark.parametrize(
    ("value", "depth"),
    [(1, 0), ("[[", 0), ([], 1), ({}, 1), ({"a": [1]}, 2), ([[], [[{}]]], 4), ([1, [2, [3]]], 3)],
)
def test_depth_counts_nested_containers(value: Any, depth: int) -> None:
    assert depth_of(value) == depth


def test_the_bound_can_be_lowered() -> None:
    assert load_json("[[1]]", max_depth=2) == [[1]]
    with pytest.raises(JsonRefused, match="nested more than 1 deep"):
        load_json("[[1]]", max_depth=1)
