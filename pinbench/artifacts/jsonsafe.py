"""JSON from outside read strictly and within bounds, so that no input gives a traceback or a
value two readers would see differently. ``load_json`` is for any JSON a user hands in (a
dataset's COCO ground truth, a line of an attestation); it refuses, with ``JsonRefused``:

- text that is not JSON (as ``json.loads`` reports it: line, column);
- nesting deeper than ``max_depth`` (default ``MAX_DEPTH``): CPython's parser recurses, so a
  few thousand ``[`` raise ``RecursionError``, and a value nested a few hundred deep breaks
  the recursive code that walks it later (``copy.deepcopy`` in pycocotools, ``json.dumps``);
- a key given twice in one object: Python keeps the last, other readers the first;
- ``NaN``, ``Infinity`` and ``-Infinity``, which Python's ``json`` accepts and JSON does not;
- an integer of more than 4300 digits (Python's own limit on converting text to int).

The depth is measured on the parsed value without recursion: a container is one level, a
scalar none (``[]`` is 1 deep, ``{"a": [1]}`` 2).
"""

from __future__ import annotations

import json
from typing import Any

from pinbench.errors import UserError

MAX_DEPTH = 64
"""Deep enough for any document pinbench reads (COCO is 5 deep, an in-toto statement under
10), far below the recursion limit."""


class JsonRefused(UserError):
    """Text that ``load_json`` refuses: ``reason`` says why (it names no file; the caller
    does)."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"not JSON pinbench accepts: {reason}")
        self.reason = reason


class _Refused(ValueError):
    """Raised inside the parser's hooks; turned into ``JsonRefused`` once out of it."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def depth_of(value: Any) -> int:
    """How deeply ``value`` (lists and dicts of JSON values) nests containers; no recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in item if isinstance(child, list | dict))
    return deepest


def load_json(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``text`` (bytes are read as UTF-8), refused as the module says."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Refused as exc:
        raise JsonRefused(reason=str(exc)) from None
    except RecursionError:
        raise JsonRefused(reason=f"nested more than {max_depth} deep") from None
    except (ValueError, TypeError) as exc:  # JSONDecodeError, UnicodeDecodeError, a huge int
        raise JsonRefused(reason=str(exc)) from None
    if depth_of(value) > max_depth:
        raise JsonRefused(reason=f"nested more than {max_depth} deep")
    return value
