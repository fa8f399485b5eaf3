"""Inputs that are not samples, and the one that streams them (decision 128).

A model input is one of four kinds, by the section it declares:

- **per-sample** (none of the three): the dataset's samples through the input's steps, one row
  per sample, the batch on axis 0;
- **constant** (``value``): a number or nested lists of numbers, of the input's element type,
  fed unchanged with every call (no batch axis: silero-vad's ``sr``, a scalar 16000 int64);
- **state** (``state``): zeros of the declared ``shape`` with the batch's size inserted at
  ``state.batch_axis`` (silero-vad's ``state``, ``shape: [2, 128]``, ``batch_axis: 1`` is
  ``(2, N, 128)``), fed with every call; in a streamed run the model's output ``state.next``
  replaces it from one chunk to the next;
- **streamed** (``stream``): a per-sample input whose samples are cut along their first axis
  into chunks of ``stream.chunk`` rows, each fed with the ``stream.context`` rows before it
  (``pinbench.worker.stream``).

Checked here, where a manifest is read (so a lockfile's copy is checked again when it is
read): each section alone and its fields; across a model's inputs and outputs in
``check_model_inputs``. Nothing here imports NumPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pinbench import bounds as b

if TYPE_CHECKING:
    from pinbench.registry.ports import Input, Output

_INT_RANGES = {
    "uint8": (0, 2**8 - 1),
    "int8": (-(2**7), 2**7 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_FLOAT_MAX = {"float16": 65504.0, "float32": 3.4028234663852886e38, "float64": math.inf}
MAX_CONSTANT_AXES = 8
"""A constant's nested lists are at most this deep (a sample rate is a scalar, a table 2-D)."""


def kind(spec: Input) -> str:
    """``per-sample``, ``constant``, ``state``, ``stream`` or ``mask``."""
    if spec.mask_of is not None:
        return "mask"
    if spec.value is not None:
        return "constant"
    if spec.state is not None:
        return "state"
    if spec.stream is not None:
        return "stream"
    return "per-sample"


def from_samples(spec: Input) -> bool:
    """Whether the input is fed from the dataset's samples (per-sample or streamed; a mask is
    made from another input's)."""
    return spec.value is None and spec.state is None and spec.mask_of is None


def constant_shape(value: Any, element_type: str, *, name: str) -> list[int]:
    """The shape of a constant's ``value`` (``[]`` for a number), or ``ValueError``: nested
    lists of one length per level, numbers of the element type (whole numbers within its range
    for an integer type, ``true``/``false`` for bool, finite numbers within its range for a
    float type), at most ``bounds.CONSTANT_ELEMENTS`` of them and ``MAX_CONSTANT_AXES`` deep."""
    shape: list[int] = []
    level: list[Any] = [value]
    while level and isinstance(level[0], list):
        if len(shape) == MAX_CONSTANT_AXES:
            raise ValueError(f"input {name!r}: value nests lists deeper than {MAX_CONSTANT_AXES}")
        lengths = {len(x) if isinstance(x, list) else -1 for x in level}
        if len(lengths) != 1 or -1 in lengths:
            raise ValueError(
                f"input {name!r}: value is not rectangular (nested lists of one length per "
                "level, numbers only at the innermost)"
            )
        shape.append(lengths.pop())
        if shape[-1] == 0:
            raise ValueError(f"input {name!r}: value holds no number (an empty list)")
        level = [y for x in level for y in x]
        b.CONSTANT_ELEMENTS.check(f"input {name!r}: value's element count", len(level))
    for x in level:
        problem = _element_problem(x, element_type)
        if problem is not None:
            raise ValueError(f"input {name!r}: value {x!r} {problem}")
    return shape


def _element_problem(x: Any, element_type: str) -> str | None:
    if isinstance(x, list):
        return "is a list where the value's other entries at that level are numbers"
    if element_type == "bool":
        return None if isinstance(x, bool) else "is not true or false (element type bool)"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return f"is not a number (element type {element_type})"
    if element_type in _INT_RANGES:
        low, high = _INT_RANGES[element_type]
        if isinstance(x, float) and not x.is_integer():
            return f"is not a whole number (element type {element_type})"
        return None if low <= x <= high else f"is outside {element_type} ({low}..{high})"
    if not math.isfinite(x) or abs(x) > _FLOAT_MAX[element_type]:
        return f"is not a finite {element_type}"
    return None


def check_input(spec: Input) -> None:
    """One input's own declaration: at most one of ``value``, ``state``, ``stream``, each
    with what it needs (``ValueError`` naming the input and the field)."""
    name = str(spec.name)
    given = [k for k in ("value", "state", "stream") if getattr(spec, k) is not None]
    if len(given) > 1:
        raise ValueError(
            f"input {name!r} declares {' and '.join(given)}: an input is a constant (value), a "
            "state (state), streamed (stream) or fed from the samples (none of them)"
        )
    if given and given[0] != "stream" and (spec.steps or spec.type != "tensor"):
        raise ValueError(
            f"input {name!r} is a {kind(spec)}: it is fed as declared, with no steps and type "
            "tensor (the samples never reach it)"
        )
    if spec.value is not None:
        shape = constant_shape(spec.value, spec.element_type, name=name)
        if spec.shape and spec.shape != shape:
            raise ValueError(
                f"input {name!r}: shape {spec.shape} is not its value's shape {shape} (a "
                "constant has no batch axis)"
            )
    if spec.state is not None:
        if not spec.shape:
            raise ValueError(
                f"input {name!r} is a state: declare its shape without the batch axis (silero-"
                "vad's (2, N, 128) state: `shape: [2, 128]`, `batch_axis: 1`); it starts as "
                "zeros of that shape"
            )
        b.STATE_ELEMENTS.check(f"input {name!r}: its state's element count", math.prod(spec.shape))
        axis = spec.state.batch_axis
        if axis is None:
            raise ValueError(
                f"input {name!r} is a state without a batch_axis: a state holds one row per "
                "sample of the batch, so say at which of its axes (silero-vad's (2, N, 128) "
                "state: `batch_axis: 1`); a state the model does not batch is not supported"
            )
        if axis > len(spec.shape):
            raise ValueError(
                f"input {name!r}: state.batch_axis {axis} is out of range for shape "
                f"{spec.shape}: the batch axis goes at 0..{len(spec.shape)} of the model's "
                f"{len(spec.shape) + 1} axes"
            )
    if spec.stream is not None:
        if spec.type == "text":
            raise ValueError(f"input {name!r}: text samples are not streamed in chunks")
        width = spec.stream.context + spec.stream.chunk
        if spec.shape and spec.shape[0] != width:
            raise ValueError(
                f"input {name!r}: shape {spec.shape} after the batch axis, but each chunk is "
                f"fed as its context and chunk together, {spec.stream.context} + "
                f"{spec.stream.chunk} = {width} rows: its first dimension must be {width}"
            )
    _check_bytes(spec)


BYTE_HOLDERS = {"uint8": 255, "float16": 2048, "int32": 1 << 31, "int64": 1 << 31}
"""Element types that hold every byte value and a ``read_bytes`` pad up to the number given
(exactly); float32 and float64 hold any pad, int8 and bool no byte above 127 or 1."""


def _check_bytes(spec: Input) -> None:
    """A ``read_bytes`` input's element type holds every byte and its pad exactly."""
    step = next((s.read_bytes for s in spec.steps if s.read_bytes is not None), None)
    if step is None:
        return
    most = BYTE_HOLDERS.get(spec.element_type, 1 << 31 if "float" in spec.element_type else -1)
    if max(255, step.pad) > most:
        raise ValueError(
            f"input {spec.name!r} reads bytes (0..255) padded with {step.pad}, which its "
            f"element_type {spec.element_type} does not hold exactly: declare uint8 (a pad up "
            "to 255), int32, int64 or float32"
        )


def check_model_inputs(inputs: Sequence[Input], outputs: Sequence[Output]) -> None:
    """Across a model's inputs and outputs: at most one streamed input; a state's ``next``
    only with one, naming an output no other state names and that is not declared among the
    outputs (it is carried, never scored); at least one input fed from the samples
    (``row_rules`` has the rules of views and lengths)."""
    if inputs and not any(from_samples(i) for i in inputs):
        raise ValueError(
            "every declared input is a constant or a state: one at least must be fed from the "
            "dataset's samples"
        )
    streamed = [str(i.name) for i in inputs if i.stream is not None]
    if len(streamed) > 1:
        raise ValueError(
            f"inputs {', '.join(map(repr, streamed))} are all streamed: a model streams one "
            "input (the others are fed per sample, constant or state)"
        )
    declared = {str(o.name) for o in outputs}
    carried: dict[str, str] = {}
    for spec in inputs:
        if spec.state is None or spec.state.next is None:
            continue
        name, nxt = str(spec.name), str(spec.state.next)
        if not streamed:
            raise ValueError(
                f"input {name!r}: state.next carries a state from one chunk of a streamed "
                "sample to the next, and no input is streamed (declare `stream` on the input "
                "the samples are cut from, or leave `next` out: zeros every call)"
            )
        if not outputs:
            raise ValueError(
                f"input {name!r}: state.next {nxt!r} is read beside the outputs a run reads: "
                "declare those outputs (with none declared, a run reads every output as an "
                "answer)"
            )
        if nxt in carried:
            raise ValueError(
                f"output {nxt!r} is the next state of both {carried[nxt]!r} and {name!r}"
            )
        if nxt in declared:
            raise ValueError(
                f"output {nxt!r} is carried into state input {name!r}: it is not an answer, "
                "leave it out of outputs"
            )
        carried[nxt] = name


def model_dims(spec: Input) -> list[int | None] | None:
    """The model input's shape as declared, ``None`` at its batch axis (and dimensions not
    declared); ``None`` where nothing is declared. A constant has its value's shape and no batch
    axis; a state its shape with the batch axis at ``state.batch_axis``; any other input its
    shape after a batch axis first."""
    if spec.value is not None:
        return list(constant_shape(spec.value, spec.element_type, name=str(spec.name)))
    if not spec.shape:
        return None
    dims: list[int | None] = list(spec.shape)
    axis = spec.state.batch_axis if spec.state is not None else 0
    assert axis is not None  # check_input
    return [*dims[:axis], None, *dims[axis:]]


def declared_shape(spec: Input) -> str:
    """What ``model_dims`` declares, as a signature mismatch names it."""
    dims = model_dims(spec) or []
    if spec.value is not None:
        return f"a value of shape {dims} (rank {len(dims)}, no batch axis)"
    if spec.state is not None:
        return (
            f"state shape {spec.shape} with the batch axis at {spec.state.batch_axis} "
            f"(rank {len(dims)})"
        )
    return f"shape {spec.shape} after the batch axis (rank {len(dims)})"


def sample_rate(spec: Input) -> int | None:
    """The sample rate of the waveforms an input's steps give (its ``resample`` step's, else
    its ``decode_audio`` step's), or None where its steps declare none."""
    rate = None
    for step in spec.steps:
        if step.decode_audio is not None and step.decode_audio.rate is not None:
            rate = step.decode_audio.rate
        if step.resample is not None:
            rate = step.resample.rate
    return rate
