"""msgspec's validation messages, made to say what to write instead.

msgspec names the field (``- at `$.inputs[0].type```) but not what it allows: "Invalid enum
value 'video'". ``explain`` walks the document's type to that field and rewrites the message
from the type itself, so every ``Literal`` field of every document (manifest, request,
lockfile) lists its allowed values without a table to keep in step; it adds the YAML
number hint only where a field marked ``QUOTED`` (a version or a range) got a number; and a
number outside its field's bounds (``pinbench.bounds``, msgspec's "Expected `int` <= 1024")
becomes "FIELD must be between A and B, got X", the value read from the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any, Final

import msgspec
import msgspec.inspect as mi

from pinbench.bounds import Bound

QUOTED: Final = msgspec.Meta(extra={"quote_numbers": True})
"""Marks a string field that YAML readers often write as a number (``version: 1.0``)."""
VersionText = Annotated[str, QUOTED]
"""A version or range: a string that must be quoted in YAML when it looks like a number."""

NUMBER_HINT: Final = "YAML reads unquoted 1.0 as a number: quote versions and ranges, e.g. '1.0.0'"

_AT = re.compile(r"^(?P<body>.*) - at `(?P<path>\$[^`]*)`$", re.DOTALL)
_TOKEN = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_GOT_NUMBER = re.compile(r"got `(int|float)`")
_OUT_OF_BOUNDS = re.compile(r"Expected `(int|float)` (>=|<=|>|<) \S+$")


def explain(message: str, root: type, data: object = None) -> str:
    """``message`` (a ``msgspec.ValidationError``'s text for ``root``), made more helpful;
    ``data``: the document it was about, to show a value outside its bounds."""
    match = _AT.match(message)
    if match is None:
        return message
    body, path = match["body"], match["path"]
    found = list(_at(mi.type_info(root), path))
    if _OUT_OF_BOUNDS.match(body):
        bound = next((b for t in found for b in _bounds(t)), None)
        if bound is not None:
            field = path.removeprefix("$").removeprefix(".")
            found_value, value = _value_at(data, path)
            if found_value:
                return bound.refusal(field, value)
            return f"{field} must be {bound.text()}"
    if body.startswith("Invalid enum value "):
        values = [v for t in found for v in _literals(t)]
        if values:
            got = body.removeprefix("Invalid enum value ")
            allowed = ", ".join(str(v) for v in values)
            return f"must be one of {allowed}; got {got} - at `{path}`"
    if _GOT_NUMBER.search(body) and any(_quoted(t) for t in found):
        return f"{message} ({NUMBER_HINT})"
    return message


def _at(t: mi.Type, path: str) -> Iterator[mi.Type]:
    """Every type the value at ``path`` may have (a union's members each followed)."""
    tokens = [m.group(1) or m.group(2) for m in _TOKEN.finditer(path.removeprefix("$"))]
    current = [t]
    for token in tokens:
        current = [nxt for c in current for nxt in _step(c, token)]
    return iter(current)


def _step(t: mi.Type, token: str) -> Iterator[mi.Type]:
    for one in _members(t):
        if isinstance(one, mi.StructType):
            yield from (f.type for f in one.fields if f.encode_name == token)
        elif isinstance(one, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
            if token.isdigit():
                yield one.item_type
        elif isinstance(one, mi.TupleType):
            if token.isdigit() and int(token) < len(one.item_types):
                yield one.item_types[int(token)]
        elif isinstance(one, mi.DictType) and token == "...":
            yield one.value_type


def _bounds(t: mi.Type) -> Iterator[Bound]:
    """The bounds a number at ``t`` has (both ends set), as ``pinbench.bounds`` wrote them."""
    for one in _members(t):
        if isinstance(one, mi.IntType | mi.FloatType):
            low, high = one.ge if one.gt is None else one.gt, one.le if one.lt is None else one.lt
            if low is not None and high is not None:
                yield Bound(low, high, "", one.gt is not None, one.lt is not None)


def _value_at(data: object, path: str) -> tuple[bool, object]:
    """The value at ``path`` in plain data, and whether there is one."""
    for m in _TOKEN.finditer(path.removeprefix("$")):
        key, index = m.group(1), m.group(2)
        if key is not None and isinstance(data, dict) and key in data:
            data = data[key]
        elif index is not None and index.isdigit() and isinstance(data, list | tuple):
            if int(index) >= len(data):
                return False, None
            data = data[int(index)]
        else:
            return False, None
    return True, data


def _members(t: mi.Type) -> Iterator[mi.Type]:
    """``t`` without its metadata, a union's members one by one."""
    if isinstance(t, mi.Metadata):
        yield from _members(t.type)
    elif isinstance(t, mi.UnionType):
        for member in t.types:
            yield from _members(member)
    else:
        yield t


def _literals(t: mi.Type) -> list[Any]:
    return [v for m in _members(t) if isinstance(m, mi.LiteralType) for v in m.values]


def _quoted(t: mi.Type) -> bool:
    if isinstance(t, mi.Metadata):
        return bool((t.extra or {}).get("quote_numbers")) or _quoted(t.type)
    if isinstance(t, mi.UnionType):
        return any(_quoted(m) for m in t.types)
    return False
