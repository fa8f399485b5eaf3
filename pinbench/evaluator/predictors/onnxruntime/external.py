"""The external-data locations an ONNX file names, read from its protobuf wire format.

``onnx`` is not a dependency of the ``onnxruntime`` environments pinbench builds, so this
walks the few messages that can hold a tensor (``onnx.proto``: model -> graph / functions ->
initializers, sparse initializers, node attributes and their subgraphs) with a small reader
that skips every other field without copying it (a 2 GB ``raw_data`` costs nothing). A tensor
uses external data when its ``data_location`` is ``EXTERNAL``, as in
``onnx.external_data_helper.uses_external_data``.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

_MAX_DEPTH = 64
"""Nested graphs (If/Loop bodies) deeper than this are refused: a file, not a recursion bomb."""

# field numbers of onnx.proto
_MODEL_GRAPH, _MODEL_FUNCTIONS = 7, 25
_FUNCTION_NODE = 7
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_SPARSE = 1, 5, 15
_NODE_ATTRIBUTE = 5
_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS, _ATTR_SPARSE, _ATTR_SPARSES = 5, 6, 10, 11, 22, 23
_SPARSE_VALUES, _SPARSE_INDICES = 1, 2
_TENSOR_NAME, _TENSOR_EXTERNAL, _TENSOR_LOCATION = 8, 13, 14
_EXTERNAL = 1


class NotProtobuf(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise NotProtobuf("a truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """``(field, wire type, value or start, end)`` of each field of one message; a
    length-delimited field gives its bytes' bounds, a varint its value."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield field, wire, value, pos
        elif wire == 2:
            size, pos = _varint(buf, pos, end)
            if pos + size > end:
                raise NotProtobuf("a field runs past the end of its message")
            yield field, wire, pos, pos + size
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > end:
                raise NotProtobuf("a fixed-size field runs past the end of its message")
        else:
            raise NotProtobuf(f"wire type {wire} of field {field}")


def _text(buf: memoryview, start: int, end: int) -> str:
    try:
        return bytes(buf[start:end]).decode("utf-8")
    except UnicodeDecodeError:
        raise NotProtobuf("a string that is not UTF-8") from None


def _tensor(buf: memoryview, start: int, end: int) -> Iterator[tuple[str, str]]:
    name, location, external = "", "", False
    for field, wire, a, b in _fields(buf, start, end):
        if field == _TENSOR_NAME and wire == 2:
            name = _text(buf, a, b)
        elif field == _TENSOR_LOCATION and wire == 0:
            external = a == _EXTERNAL
        elif field == _TENSOR_EXTERNAL and wire == 2:
            entry = {f: _text(buf, x, y) for f, w, x, y in _fields(buf, a, b) if w == 2}
            if entry.get(1) == "location":
                location = entry.get(2, "")
    if external:
        yield name, location


def _graph(buf: memoryview, start: int, end: int, depth: int) -> Iterator[tuple[str, str]]:
    if depth > _MAX_DEPTH:
        raise NotProtobuf(f"graphs nested deeper than {_MAX_DEPTH}")
    for field, wire, a, b in _fields(buf, start, end):
        if wire != 2:
            continue
        if field == _GRAPH_INITIALIZER:
            yield from _tensor(buf, a, b)
        elif field == _GRAPH_SPARSE:
            yield from _sparse(buf, a, b)
        elif field == _GRAPH_NODE:
            yield from _node(buf, a, b, depth)


def _sparse(buf: memoryview, start: int, end: int) -> Iterator[tuple[str, str]]:
    for field, wire, a, b in _fields(buf, start, end):
        if wire == 2 and field in (_SPARSE_VALUES, _SPARSE_INDICES):
            yield from _tensor(buf, a, b)


def _node(buf: memoryview, start: int, end: int, depth: int) -> Iterator[tuple[str, str]]:
    for field, wire, a, b in _fields(buf, start, end):
        if field != _NODE_ATTRIBUTE or wire != 2:
            continue
        for f, w, x, y in _fields(buf, a, b):
            if w != 2:
                continue
            if f in (_ATTR_T, _ATTR_TENSORS):
                yield from _tensor(buf, x, y)
            elif f in (_ATTR_SPARSE, _ATTR_SPARSES):
                yield from _sparse(buf, x, y)
            elif f in (_ATTR_G, _ATTR_GRAPHS):
                yield from _graph(buf, x, y, depth + 1)


def external_locations(path: Path) -> list[tuple[str, str]]:
    """``(tensor name, location)`` of every tensor of the ONNX file at ``path`` whose data is
    external, in file order; ``NotProtobuf`` if the file is not a well-formed message."""
    with path.open("rb") as fh:
        if path.stat().st_size == 0:
            return []
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            buf = memoryview(mapped)
            try:
                found: list[tuple[str, str]] = []
                for field, wire, a, b in _fields(buf, 0, len(buf)):
                    if wire != 2:
                        continue
                    if field == _MODEL_GRAPH:
                        found.extend(_graph(buf, a, b, 0))
                    elif field == _MODEL_FUNCTIONS:
                        for f, w, x, y in _fields(buf, a, b):
                            if f == _FUNCTION_NODE and w == 2:
                                found.extend(_node(buf, x, y, 0))
                return found
            finally:
                buf.release()
