"""A TensorFlow Lite model's signature read from its FlatBuffer: nothing is interpreted, no
operator runs.

A ``.tflite`` file is a FlatBuffer whose root table is TensorFlow Lite's ``Model`` (schema
``tensorflow/compiler/mlir/lite/schema/schema.fbs``), with the file identifier ``TFL3`` at
bytes 4-8. The interpreter runs its first subgraph; that subgraph's ``inputs`` and ``outputs``
index its ``tensors``, each with a name, an element type, a shape (``shape_signature`` holds
``-1`` where a dimension is dynamic) and quantization parameters (a ``scale`` and a
``zero_point`` per tensor, or per channel). A model that keeps state between calls holds
variables (tensors of type ``RESOURCE``, or ``is_variable``); the first subgraph's ``CALL_ONCE``
operators name the subgraphs that give the resource variables their initial values
(``init_subgraphs``), which the predictor runs again to start a sample afresh. A custom
operator (``CUSTOM``, or a ``custom_code``: TensorFlow's Flex ops, ``WriteFile`` among them,
which an interpreter with the Flex delegate linked runs; TensorFlow 2.21's pip interpreter
refuses them when it allocates) is refused here, before any interpreter sees the file.

Every offset is checked against the file before it is followed, every vector's length against
what the file can hold and a cap; the tables nest a fixed four levels deep (model, subgraph,
tensor, quantization), so nothing recurses. The file is mapped, not read whole.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

IDENTIFIER = b"TFL3"
MAX_TENSORS = 1 << 20
"""Tensors in one subgraph: the largest published models have some ten thousand."""
MAX_SUBGRAPHS = 1 << 12
MAX_ALL_TENSORS = 1 << 22
"""Tensors over all subgraphs (their variables are counted): subgraphs may share one vector of
tensors, so each subgraph's cap alone would let a small file make 2^32 reads."""
MAX_RANK = 32
MAX_NAME = 4096
MAX_CHANNELS = 1 << 20
"""Per-channel quantization parameters of one tensor."""
MAX_PORTS = 4096
"""The most inputs, and the most outputs, the first subgraph may list: each is read whole
(its shape, name and quantization), so their number bounds the reader's work."""

TYPES = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    5: "string",
    6: "bool",
    7: "int16",
    8: "complex64",
    9: "int8",
    10: "float64",
    11: "complex128",
    12: "uint64",
    13: "resource",
    14: "variant",
    15: "uint32",
    16: "uint16",
    17: "int4",
    18: "bfloat16",
}
"""``TensorType`` to the element type's name (NumPy's, where NumPy has it)."""

# field numbers of the tables read (schema.fbs)
_MODEL_OPCODES, _MODEL_SUBGRAPHS = 1, 2
_SUBGRAPH_TENSORS, _SUBGRAPH_INPUTS, _SUBGRAPH_OUTPUTS, _SUBGRAPH_OPERATORS = 0, 1, 2, 3
_OPCODE_DEPRECATED, _OPCODE_CUSTOM, _OPCODE_BUILTIN = 0, 1, 3
CUSTOM = 32
"""``BuiltinOperator.CUSTOM``: an operator the file names by a string (``custom_code``)."""
_OPERATOR_OPCODE, _OPERATOR_OPTIONS = 0, 4
CALL_ONCE = 129
"""``BuiltinOperator.CALL_ONCE``; its ``CallOnceOptions`` has ``init_subgraph_index`` first."""
MAX_OPCODES = 1 << 16
MAX_OPERATORS = 1 << 22
_TENSOR_SHAPE, _TENSOR_TYPE, _TENSOR_NAME, _TENSOR_QUANT = 0, 1, 3, 4
_TENSOR_IS_VARIABLE, _TENSOR_SHAPE_SIGNATURE = 5, 7
_QUANT_SCALE, _QUANT_ZERO_POINT, _QUANT_DIMENSION = 2, 3, 6


class TfliteError(ValueError):
    """The file is not a TensorFlow Lite model whose signature can be read; the message says
    why (a plain ``ValueError`` of one string: it pickles)."""

    @property
    def reason(self) -> str:
        return str(self)


class CustomOperator(TfliteError):
    """A TensorFlow Lite model pinbench refuses: it uses a custom or Flex operator (named in
    the message), code outside TensorFlow Lite's builtins."""


def refusal(exc: TfliteError) -> str:
    """What a reader of ``exc`` says: a custom operator's model is a TensorFlow Lite model
    refused for that operator, anything else is not a TensorFlow Lite model it can read."""
    if isinstance(exc, CustomOperator):
        return f"a TensorFlow Lite model refused: {exc}"
    return f"not a TensorFlow Lite model: {exc}"


@dataclass(frozen=True, slots=True)
class Quantization:
    """A tensor's affine quantization: ``real = (q - zero_point) * scale``."""

    scale: float
    zero_point: int


@dataclass(frozen=True, slots=True)
class TfliteTensor:
    name: str
    dtype: str
    shape: tuple[int | None, ...]
    """With the batch axis; ``None`` where the file's shape signature says dynamic."""
    quantization: Quantization | None
    """Per-tensor quantization; None for a tensor that is not quantized."""
    per_channel: bool = False
    """Quantized with one scale per channel (``quantization`` is then None)."""


@dataclass(frozen=True, slots=True)
class TfliteSignature:
    inputs: list[TfliteTensor]
    outputs: list[TfliteTensor]
    variables: int
    """Variables the model holds (its state between calls), over all its subgraphs."""
    resources: int = 0
    """Those of them that are resource variables (type ``RESOURCE``)."""
    init_subgraphs: tuple[int, ...] = ()
    """The subgraphs the first subgraph's ``CALL_ONCE`` operators run, in order."""


def read_tflite_signature(path: Path) -> TfliteSignature:
    """The first subgraph's inputs and outputs, and the model's variable count."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            if size < 8:
                raise TfliteError(f"{size} bytes: too short for a TensorFlow Lite model")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _Reader(data, size).signature()
    except OSError as exc:
        raise TfliteError(f"cannot read it ({exc.strerror or exc})") from None


class _Reader:
    def __init__(self, data: mmap.mmap, size: int) -> None:
        self.data = data
        self.size = size

    def _u(self, fmt: str, pos: int) -> int:
        width = struct.calcsize(fmt)
        if pos < 0 or pos + width > self.size:
            raise TfliteError(f"an offset ({pos}) points past the file's {self.size} bytes")
        value: int = struct.unpack_from(fmt, self.data, pos)[0]
        return value

    def signature(self) -> TfliteSignature:
        if self.data[4:8] != IDENTIFIER:
            raise TfliteError(
                f"no TensorFlow Lite identifier {IDENTIFIER.decode()!r} at bytes 4-8 "
                f"(found {bytes(self.data[4:8])!r})"
            )
        model = self._u("<I", 0)
        subgraphs = self._tables(model, _MODEL_SUBGRAPHS, MAX_SUBGRAPHS, "subgraphs")
        if not subgraphs:
            raise TfliteError("the model has no subgraph")
        variables = resources = 0
        first: tuple[list[TfliteTensor], list[TfliteTensor]] | None = None
        seen = 0
        for index, graph in enumerate(subgraphs):
            tensors = self._tables(graph, _SUBGRAPH_TENSORS, MAX_TENSORS, "tensors")
            seen += len(tensors)
            if seen > MAX_ALL_TENSORS:
                raise TfliteError(f"its subgraphs hold over {MAX_ALL_TENSORS} tensors")
            for t in tensors:
                kind = self._field_scalar(t, _TENSOR_TYPE, "<b", 0)
                resources += kind == 13
                if kind == 13 or self._field_scalar(t, _TENSOR_IS_VARIABLE, "<B", 0):
                    variables += 1
            if index == 0:
                ins = self._ints(graph, _SUBGRAPH_INPUTS, MAX_PORTS, "inputs", "<i")
                outs = self._ints(graph, _SUBGRAPH_OUTPUTS, MAX_PORTS, "outputs", "<i")
                for side, found in (("input", ins), ("output", outs)):
                    if len(set(found)) != len(found):
                        raise TfliteError(f"the first subgraph names one tensor as two {side}s")
                first = (
                    [self._tensor(tensors, i, "input") for i in ins],
                    [self._tensor(tensors, i, "output") for i in outs],
                )
        assert first is not None
        inits = self._init_subgraphs(model, subgraphs[0], len(subgraphs))
        return TfliteSignature(first[0], first[1], variables, resources, inits)

    def _init_subgraphs(self, model: int, graph: int, count: int) -> tuple[int, ...]:
        codes = []
        for code in self._tables(model, _MODEL_OPCODES, MAX_OPCODES, "operator codes"):
            old = self._field_scalar(code, _OPCODE_DEPRECATED, "<b", 0)
            codes.append(max(old, self._field_scalar(code, _OPCODE_BUILTIN, "<i", 0)))
            custom = self._string(code, _OPCODE_CUSTOM)
            if codes[-1] == CUSTOM or custom:
                raise CustomOperator(
                    f"it uses the custom operator {custom or '(unnamed)'!r}: custom and Flex "
                    "operators are code outside TensorFlow Lite's builtins (Flex ops are "
                    "TensorFlow's own, WriteFile among them); pinbench runs builtins only"
                )
        found = []
        for op in self._tables(graph, _SUBGRAPH_OPERATORS, MAX_OPERATORS, "operators"):
            index = self._field_scalar(op, _OPERATOR_OPCODE, "<I", 0)
            if index >= len(codes):
                raise TfliteError(f"an operator names operator code {index} of {len(codes)}")
            if codes[index] != CALL_ONCE:
                continue
            options = self._field_offset(op, _OPERATOR_OPTIONS)
            init = 0 if options is None else self._field_scalar(options, 0, "<i", 0)
            if not 0 < init < count:
                raise TfliteError(f"a CALL_ONCE names subgraph {init} of {count}")
            found.append(init)
        return tuple(found)

    def _tensor(self, tensors: list[int], index: int, side: str) -> TfliteTensor:
        if not 0 <= index < len(tensors):
            raise TfliteError(
                f"the subgraph's {side} {index} names no tensor (it has {len(tensors)})"
            )
        t = tensors[index]
        kind = self._field_scalar(t, _TENSOR_TYPE, "<b", 0)
        dtype = TYPES.get(kind)
        if dtype is None:
            raise TfliteError(f"{side} tensor {index} has an unknown element type {kind}")
        shape = self._ints(t, _TENSOR_SHAPE, MAX_RANK, "a shape", "<i")
        signature = self._ints(t, _TENSOR_SHAPE_SIGNATURE, MAX_RANK, "a shape signature", "<i")
        if signature and len(signature) != len(shape):
            raise TfliteError(
                f"{side} tensor {index}: shape {shape} and shape signature {signature} differ "
                "in rank"
            )
        dims = tuple(
            None if (signature and signature[k] < 0) or d < 0 else d for k, d in enumerate(shape)
        )
        name = self._string(t, _TENSOR_NAME) or str(index)
        quant, per_channel = self._quantization(t, f"{side} {name!r}")
        return TfliteTensor(name, dtype, dims, quant, per_channel)

    def _quantization(self, tensor: int, what: str) -> tuple[Quantization | None, bool]:
        q = self._field_offset(tensor, _TENSOR_QUANT)
        if q is None:
            return None, False
        # the counts, and the first of each only: a per-channel tensor is not read further
        first_scale, scales = self._vector(q, _QUANT_SCALE, 4, MAX_CHANNELS, "scales")
        first_zero, zeros = self._vector(q, _QUANT_ZERO_POINT, 8, MAX_CHANNELS, "zero points")
        if not scales:
            return None, False
        if zeros not in (0, scales):
            raise TfliteError(f"{what}: {scales} scales but {zeros} zero points")
        if scales > 1:
            return None, True
        (scale,) = struct.unpack_from("<f", self.data, first_scale)
        zero = struct.unpack_from("<q", self.data, first_zero)[0] if zeros else 0
        return Quantization(scale, zero), False

    # ------------------------------------------------------------ FlatBuffer primitives

    def _field(self, table: int, field: int) -> int | None:
        """The absolute position of ``field`` in ``table``, None when absent."""
        vtable = table - self._u("<i", table)
        vsize = self._u("<H", vtable)
        if vsize < 4 or vsize % 2:
            raise TfliteError(f"a table at {table} has a vtable of {vsize} bytes")
        slot = 4 + 2 * field
        if slot + 2 > vsize:
            return None
        offset = self._u("<H", vtable + slot)
        return None if offset == 0 else table + offset

    def _field_scalar(self, table: int, field: int, fmt: str, default: int) -> int:
        pos = self._field(table, field)
        return default if pos is None else self._u(fmt, pos)

    def _field_offset(self, table: int, field: int) -> int | None:
        pos = self._field(table, field)
        return None if pos is None else pos + self._u("<I", pos)

    def _vector(self, table: int, field: int, width: int, cap: int, what: str) -> tuple[int, int]:
        start = self._field_offset(table, field)
        if start is None:
            return 0, 0
        count = self._u("<I", start)
        if count > cap or start + 4 + count * width > self.size:
            raise TfliteError(f"{what}: a vector of {count} entries, past the file or the cap")
        return start + 4, count

    def _tables(self, table: int, field: int, cap: int, what: str) -> list[int]:
        first, count = self._vector(table, field, 4, cap, what)
        return [first + 4 * k + self._u("<I", first + 4 * k) for k in range(count)]

    def _ints(self, table: int, field: int, cap: int, what: str, fmt: str) -> list[int]:
        width = struct.calcsize(fmt)
        first, count = self._vector(table, field, width, cap, what)
        return list(struct.unpack_from(f"<{count}{fmt[1]}", self.data, first)) if count else []

    def _string(self, table: int, field: int) -> str:
        first, count = self._vector(table, field, 1, MAX_NAME, "a name")
        try:
            return bytes(self.data[first : first + count]).decode("utf-8")
        except UnicodeDecodeError:
            raise TfliteError(f"a tensor's name at {first} is not UTF-8") from None
