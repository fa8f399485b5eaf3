"""A one-node ONNX model written straight in protobuf's wire format.

The ``onnx`` package is not part of ONNX Runtime's pinned evaluation environment (the
runtime does not need it), so the operator benchmark encodes the few messages it needs
itself: ``ModelProto`` with an opset, a ``GraphProto`` of one ``NodeProto`` with int, float
and int-list attributes, and typed, fully shaped inputs and outputs. Field numbers are
onnx.proto's (proto2: repeated scalars unpacked). ``tests/test_operators.py`` checks the
bytes decode, with the ``onnx`` package, to the model ``onnx.helper`` builds.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

FLOAT = 1
FLOAT16 = 10
"""``TensorProto.DataType`` values."""

_VARINT, _FIXED32, _BYTES = 0, 5, 2
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7

Attribute = int | float | Sequence[int]


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 two's complement: a negative is ten bytes
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, _VARINT) + _varint(value)


def _bytes(field: int, value: bytes) -> bytes:
    return _key(field, _BYTES) + _varint(len(value)) + value


def _str(field: int, value: str) -> bytes:
    return _bytes(field, value.encode())


def _attribute(name: str, value: Attribute) -> bytes:
    if isinstance(value, int):  # a bool too
        body = _int(3, int(value)) + _int(20, _ATTR_INT)
    elif isinstance(value, float):
        body = _key(2, _FIXED32) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    else:
        body = b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)
    return _str(1, name) + body


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Attribute) -> bytes:
    """A ``NodeProto`` (attributes sorted by name, as ``onnx.helper.make_node`` writes them)."""
    return (
        b"".join(_str(1, i) for i in inputs)
        + b"".join(_str(2, o) for o in outputs)
        + _str(4, op_type)
        + b"".join(_bytes(5, _attribute(k, attrs[k])) for k in sorted(attrs))
    )


def value_info(name: str, elem_type: int, shape: Sequence[int]) -> bytes:
    """A ``ValueInfoProto`` of a tensor with a fixed shape."""
    dims = b"".join(_bytes(1, _int(1, d)) for d in shape)
    tensor = _int(1, elem_type) + _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor))


def model(
    one_node: bytes,
    name: str,
    inputs: Mapping[str, Sequence[int]],
    outputs: Mapping[str, Sequence[int]],
    *,
    elem_type: int,
    opset: int,
    ir_version: int,
) -> bytes:
    """A ``ModelProto`` of a graph holding ``one_node``, with the default domain at ``opset``."""
    graph = (
        _bytes(1, one_node)
        + _str(2, name)
        + b"".join(_bytes(11, value_info(n, elem_type, s)) for n, s in inputs.items())
        + b"".join(_bytes(12, value_info(n, elem_type, s)) for n, s in outputs.items())
    )
    opset_id = _str(1, "") + _int(2, opset)
    return _int(1, ir_version) + _bytes(7, graph) + _bytes(8, opset_id)
