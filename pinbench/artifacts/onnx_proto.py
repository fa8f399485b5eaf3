"""What an ONNX file holds that decides where its bytes come from, read from the protobuf wire
format: every external-data location it names, and its main graph's inputs and outputs.

``onnx`` is not a dependency of the ``onnxruntime`` environments pinbench builds, so a small
reader walks ``onnx.proto``'s messages, skipping every other field without copying it (a 2 GB
``raw_data`` costs nothing). It visits *every* place a ``TensorProto`` can sit:

- ``ModelProto``: ``graph`` (7), ``training_info`` (20: ``initialization`` 1 and
  ``algorithm`` 2, both graphs), ``functions`` (25);
- ``GraphProto``: ``node`` (1), ``initializer`` (5), ``sparse_initializer`` (15);
- ``FunctionProto``: ``node`` (7) and ``attribute_proto`` (11, the attributes' defaults);
- ``NodeProto``: ``attribute`` (5);
- ``AttributeProto``: ``t`` (5), ``g`` (6), ``tensors`` (10), ``graphs`` (11),
  ``sparse_tensor`` (22), ``sparse_tensors`` (23);
- ``SparseTensorProto``: ``values`` (1), ``indices`` (2).

Protobuf merges a singular message field that occurs twice, so one tensor's fields may be
spread over several occurrences. The reader therefore reports every ``location`` entry of
every tensor occurrence, whatever its ``data_location`` says (a superset of what any parser
reads), and a tensor marked ``EXTERNAL`` that names no location as location ``""``.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pinbench.errors import Picklable

MAX_DEPTH = 64
"""Graphs nested deeper than this (If/Loop bodies) are refused: a file, not a recursion bomb."""

# field numbers of onnx.proto
_MODEL_GRAPH, _MODEL_TRAINING, _MODEL_FUNCTIONS = 7, 20, 25
_MODEL_METADATA = 14
_TRAINING_GRAPHS = (1, 2)
_FUNCTION_NODE, _FUNCTION_DEFAULTS = 7, 11
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT, _GRAPH_SPARSE = 1, 5, 11, 12, 15
_VALUE_NAME, _VALUE_TYPE = 1, 2
_TYPE_TENSOR, _TENSOR_ELEM, _TENSOR_SHAPE, _SHAPE_DIM, _DIM_VALUE, _DIM_PARAM = 1, 1, 2, 1, 1, 2
_NODE_ATTRIBUTE = 5
_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS, _ATTR_SPARSE, _ATTR_SPARSES = 5, 6, 10, 11, 22, 23
_SPARSE_VALUES, _SPARSE_INDICES = 1, 2
_TENSOR_NAME, _TENSOR_EXTERNAL, _TENSOR_LOCATION = 8, 13, 14
_ENTRY_KEY, _ENTRY_VALUE = 1, 2
_EXTERNAL = 1


class NotProtobuf(ValueError):
    """The bytes are not a well-formed protobuf message."""


@dataclass
class OnnxFacts:
    """What ``read_onnx`` found in one ONNX file."""

    locations: list[tuple[str, str]] = field(default_factory=list)
    """``(tensor name, location)`` of every tensor that names external data, in file order."""
    graphs: int = 0
    """How many times the model's ``graph`` field occurs (0: the file has no graph)."""
    inputs: list[str] = field(default_factory=list)
    """The main graph's inputs that are not initializers (what a caller feeds)."""
    outputs: list[str] = field(default_factory=list)
    """The main graph's outputs."""


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
        number, wire = key >> 3, key & 7
        if number == 0:
            raise NotProtobuf("a field numbered 0")
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield number, wire, value, pos
        elif wire == 2:
            size, pos = _varint(buf, pos, end)
            if pos + size > end:
                raise NotProtobuf("a field runs past the end of its message")
            yield number, wire, pos, pos + size
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > end:
                raise NotProtobuf("a fixed-size field runs past the end of its message")
        else:
            raise NotProtobuf(f"wire type {wire} of field {number}")


def _messages(buf: memoryview, start: int, end: int, wanted: int) -> Iterator[tuple[int, int]]:
    """The bounds of each length-delimited occurrence of field ``wanted``."""
    for number, wire, a, b in _fields(buf, start, end):
        if number == wanted and wire == 2:
            yield a, b


def _text(buf: memoryview, start: int, end: int) -> str:
    try:
        return bytes(buf[start:end]).decode("utf-8")
    except UnicodeDecodeError:
        raise NotProtobuf("a string that is not UTF-8") from None


class _Walk:
    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.found: list[tuple[str, str]] = []

    def tensor(self, start: int, end: int) -> None:
        name, external, named = "", False, False
        locations: list[str] = []
        for number, wire, a, b in _fields(self.buf, start, end):
            if number == _TENSOR_NAME and wire == 2:
                name = _text(self.buf, a, b)
            elif number == _TENSOR_LOCATION and wire == 0:
                external = a == _EXTERNAL
            elif number == _TENSOR_EXTERNAL and wire == 2:
                key, value = "", ""
                for f, w, x, y in _fields(self.buf, a, b):
                    if w == 2 and f == _ENTRY_KEY:
                        key = _text(self.buf, x, y)
                    elif w == 2 and f == _ENTRY_VALUE:
                        value = _text(self.buf, x, y)
                if key == "location":
                    named = True
                    locations.append(value)
        if external and not named:
            locations.append("")
        self.found.extend((name, location) for location in locations)

    def sparse(self, start: int, end: int) -> None:
        for number, wire, a, b in _fields(self.buf, start, end):
            if wire == 2 and number in (_SPARSE_VALUES, _SPARSE_INDICES):
                self.tensor(a, b)

    def attribute(self, start: int, end: int, depth: int) -> None:
        for number, wire, a, b in _fields(self.buf, start, end):
            if wire != 2:
                continue
            if number in (_ATTR_T, _ATTR_TENSORS):
                self.tensor(a, b)
            elif number in (_ATTR_SPARSE, _ATTR_SPARSES):
                self.sparse(a, b)
            elif number in (_ATTR_G, _ATTR_GRAPHS):
                self.graph(a, b, depth + 1)

    def node(self, start: int, end: int, depth: int) -> None:
        for a, b in _messages(self.buf, start, end, _NODE_ATTRIBUTE):
            self.attribute(a, b, depth)

    def graph(self, start: int, end: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise NotProtobuf(f"graphs nested deeper than {MAX_DEPTH}")
        for number, wire, a, b in _fields(self.buf, start, end):
            if wire != 2:
                continue
            if number == _GRAPH_INITIALIZER:
                self.tensor(a, b)
            elif number == _GRAPH_SPARSE:
                self.sparse(a, b)
            elif number == _GRAPH_NODE:
                self.node(a, b, depth)

    def function(self, start: int, end: int) -> None:
        for number, wire, a, b in _fields(self.buf, start, end):
            if wire != 2:
                continue
            if number == _FUNCTION_NODE:
                self.node(a, b, 0)
            elif number == _FUNCTION_DEFAULTS:
                self.attribute(a, b, 0)


def _value_names(buf: memoryview, start: int, end: int, wanted: int) -> list[str]:
    names = []
    for a, b in _messages(buf, start, end, wanted):
        name = ""
        for x, y in _messages(buf, a, b, _VALUE_NAME):
            name = _text(buf, x, y)
        names.append(name)
    return names


def _initializer_names(buf: memoryview, start: int, end: int) -> set[str]:
    names: set[str] = set()
    for number, wire, a, b in _fields(buf, start, end):
        if wire == 2 and number == _GRAPH_INITIALIZER:
            names.update(_text(buf, x, y) for x, y in _messages(buf, a, b, _TENSOR_NAME))
        elif wire == 2 and number == _GRAPH_SPARSE:  # a sparse initializer is named by values
            for x, y in _messages(buf, a, b, _SPARSE_VALUES):
                names.update(_text(buf, p, q) for p, q in _messages(buf, x, y, _TENSOR_NAME))
    return names


def _read(buf: memoryview) -> OnnxFacts:
    facts, walk = OnnxFacts(), _Walk(buf)
    inputs: list[str] = []
    initializers: set[str] = set()
    for number, wire, a, b in _fields(buf, 0, len(buf)):
        if wire != 2:
            continue
        if number == _MODEL_GRAPH:
            facts.graphs += 1
            walk.graph(a, b, 0)
            inputs += _value_names(buf, a, b, _GRAPH_INPUT)
            facts.outputs += _value_names(buf, a, b, _GRAPH_OUTPUT)
            initializers |= _initializer_names(buf, a, b)
        elif number == _MODEL_TRAINING:
            for inner, kind, x, y in _fields(buf, a, b):
                if kind == 2 and inner in _TRAINING_GRAPHS:
                    walk.graph(x, y, 1)
        elif number == _MODEL_FUNCTIONS:
            walk.function(a, b)
    facts.inputs = [name for name in inputs if name not in initializers]
    facts.locations = walk.found
    return facts


def read_onnx(path: Path) -> OnnxFacts:
    """The facts of the ONNX file at ``path``; ``NotProtobuf`` if it is not a well-formed
    message (an empty file is a well-formed, empty one: no graph)."""
    with path.open("rb") as fh:
        if path.stat().st_size == 0:
            return OnnxFacts()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            buf = memoryview(mapped)
            try:
                return _read(buf)
            finally:
                buf.release()


def external_locations(path: Path) -> list[tuple[str, str]]:
    """``(tensor name, location)`` of every tensor of the ONNX file at ``path`` that names
    external data, in file order; ``NotProtobuf`` if the file is not a well-formed message."""
    return read_onnx(path).locations


class MetadataTooLarge(Picklable, ValueError):
    """A metadata value larger than its reader takes."""

    def __init__(self, *, key: str, size: int, limit: int) -> None:
        super().__init__(f"metadata {key!r} holds {size} bytes, more than the {limit} read")
        self.key = key
        self.size = size
        self.limit = limit


@dataclass(frozen=True)
class GraphOutput:
    """One output of the main graph as its ``ValueInfoProto`` types it."""

    name: str
    elem_type: int
    """``TensorProto.DataType`` of a tensor output; 0: not a tensor (a sequence, a map...)."""
    dims: list[int | None] | None
    """Each dimension's ``dim_value`` (None: symbolic or unknown); None: no ``shape`` field."""


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _dim(buf: memoryview, start: int, end: int) -> int | None:
    found = None  # dim_value and dim_param are a oneof: the last one given wins
    for number, wire, value, _ in _fields(buf, start, end):
        if number == _DIM_VALUE and wire == 0:
            found = _int64(value)
        elif number == _DIM_PARAM and wire == 2:
            found = None
    return found


def _graph_output(buf: memoryview, start: int, end: int) -> GraphOutput:
    name, elem, dims = "", 0, None
    for number, wire, a, b in _fields(buf, start, end):
        if number == _VALUE_NAME and wire == 2:
            name = _text(buf, a, b)
        elif number == _VALUE_TYPE and wire == 2:
            for x, y in _messages(buf, a, b, _TYPE_TENSOR):
                for field_no, kind, p, q in _fields(buf, x, y):
                    if field_no == _TENSOR_ELEM and kind == 0:
                        elem = p
                    elif field_no == _TENSOR_SHAPE and kind == 2:
                        dims = [] if dims is None else dims
                        dims += [_dim(buf, u, v) for u, v in _messages(buf, p, q, _SHAPE_DIM)]
    return GraphOutput(name, elem, dims)


def graph_outputs(path: Path) -> list[GraphOutput]:
    """The main graph's outputs of the ONNX file at ``path`` with their types, read as the rest
    of this module reads (every other field skipped, ``raw_data`` never copied);
    ``NotProtobuf`` if the file is not a well-formed message."""
    if path.stat().st_size == 0:
        return []
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        buf = memoryview(mapped)
        try:
            return [
                _graph_output(buf, x, y)
                for a, b in _messages(buf, 0, len(buf), _MODEL_GRAPH)
                for x, y in _messages(buf, a, b, _GRAPH_OUTPUT)
            ]
        finally:
            buf.release()


def metadata_props(path: Path, *, wanted: str, max_bytes: int) -> list[tuple[str, str | None]]:
    """``(key, value)`` of each ``metadata_props`` entry of the ONNX file at ``path`` (what
    ONNX Runtime's ``custom_metadata_map`` holds), in file order; a value is decoded only for
    the key ``wanted`` (None for others), and refused past ``max_bytes``. Only the model's
    top-level fields are walked. ``NotProtobuf`` if the file is not a well-formed message."""
    if path.stat().st_size == 0:
        return []
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        buf = memoryview(mapped)
        try:
            found: list[tuple[str, str | None]] = []
            for start, end in _messages(buf, 0, len(buf), _MODEL_METADATA):
                key, where = "", (0, 0)
                for number, wire, a, b in _fields(buf, start, end):
                    if wire == 2 and number == _ENTRY_KEY:
                        key = _text(buf, a, b)
                    elif wire == 2 and number == _ENTRY_VALUE:
                        where = (a, b)
                if key == wanted and where[1] - where[0] > max_bytes:
                    raise MetadataTooLarge(key=key, size=where[1] - where[0], limit=max_bytes)
                found.append((key, _text(buf, *where) if key == wanted else None))
            return found
        finally:
            buf.release()
