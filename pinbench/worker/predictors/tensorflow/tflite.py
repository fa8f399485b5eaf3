"""A TensorFlow Lite model run by TensorFlow's own interpreter (``tf.lite.Interpreter``, in the
``tensorflow-cpu`` wheel the framework pins; decision 280).

Inputs and outputs are bound by the names the file gives its first subgraph's tensors, read
from the FlatBuffer (``artifacts.tflite``) as ``pinbench manifest model`` reads them, and the
interpreter's own details are checked to agree. A tensor's batch axis is what the file says:
a model built for one sample (``[1, ...]``, as most ``.tflite`` files are) is invoked once per
row of a batch, the rows' outputs stacked, as the packages that ship such files call it (fer's
``_classify_emotions``).

**Quantized tensors** (int8/uint8 with one scale and zero point): the manifest declares the
file's own ``quantization`` on that input or output, or the run is refused naming them; pinbench
applies none unasked. An input's float32 values are quantized as ``round(x / scale +
zero_point)`` in float64 (NumPy's round, half to even), clipped to the integer type's range (a
value past it is refused by no one: it saturates, where pymicro-wakeword's cast would wrap); an
output's integers are dequantized as ``(q - zero_point) * scale`` in float32. Per-channel
quantized inputs and outputs are refused.

**State**: a model that holds variables (a streaming model's state: microWakeWord's ring
buffers) starts every invoke from their initial values, so each sample is answered alone,
whatever ran before it; a streamed input (``stream``) carries them from chunk to chunk of one
sample instead, started afresh when each sample's stream begins (``begin_stream``; one sample
at a time). ``reset_all_variables`` resets ``is_variable`` tensors only (measured:
a resource variable kept its value), so the subgraphs the file's ``CALL_ONCE`` operators run to
initialise resource variables are allocated and invoked again (through the interpreter's
wrapper, ``_interpreter``: the public API has no call for it), some 2 us inside the timed call.
Checked against a fresh interpreter per sample, answer for answer (tests).
A model with resource variables and no such subgraph is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from pinbench.artifacts.tflite import TfliteError, TfliteTensor, read_tflite_signature
from pinbench.registry.lite_files import QuantizationRefused, declared_for, quantization_of
from pinbench.registry.ports import Input, Output, Quantization
from pinbench.worker.predictors.base import ModelLoadError, Port

FORMAT = "tflite"


def quantize(x: Any, q: Quantization, dtype: Any) -> Any:
    info = np.iinfo(dtype)
    scaled = np.round(np.asarray(x, np.float64) / q.scale + q.zero_point)
    return np.clip(scaled, info.min, info.max).astype(dtype)


def dequantize(x: Any, q: Quantization) -> Any:
    return (np.asarray(x).astype(np.float32) - np.float32(q.zero_point)) * np.float32(q.scale)


class TfliteModel:
    """One interpreter: ``inputs``/``outputs`` as the manifest sees them (a quantized tensor
    as the float32 it is fed or read as), ``call`` on the bound ones."""

    def __init__(
        self, path: Path, threads: int | None, inputs: Sequence[Input], outputs: Sequence[Output]
    ) -> None:
        try:
            signature = read_tflite_signature(path)
        except TfliteError as exc:
            raise ModelLoadError(model=FORMAT, reason=str(exc)) from None
        read_all = not outputs
        try:
            self._qin = [
                quantization_of(t, declared_for(inputs, t, k), "input")
                for k, t in enumerate(signature.inputs)
            ]
            self._qout = {}
            for k, t in enumerate(signature.outputs):
                spec = declared_for(outputs, t, k)
                if spec is not None or read_all:
                    self._qout[t.name] = quantization_of(t, spec, "output")
        except QuantizationRefused as exc:
            raise ModelLoadError(model=FORMAT, reason=str(exc)) from None
        self.inputs = [_port(t, q) for t, q in zip(signature.inputs, self._qin, strict=True)]
        self.outputs = [_port(t, self._qout.get(t.name)) for t in signature.outputs]
        if signature.resources and not signature.init_subgraphs:
            raise ModelLoadError(
                model=FORMAT,
                reason=f"it holds {signature.resources} resource variables that no CALL_ONCE "
                "initialises: pinbench cannot start each sample from their initial values",
            )
        self._inits = signature.init_subgraphs
        self._stateful = signature.variables > 0
        self._carry = False
        it: Any = tf.lite.Interpreter(model_path=str(path), num_threads=threads)
        it.allocate_tensors()
        details = it.get_input_details()
        got = [d["name"] for d in details]
        if got != [t.name for t in signature.inputs]:
            raise ModelLoadError(
                model=FORMAT,
                reason=f"the interpreter's inputs {got} are not the file's "
                f"{[t.name for t in signature.inputs]}",
            )
        self._interpreter = it
        self._in = {d["name"]: (d["index"], d["dtype"]) for d in details}
        self._out = {d["name"]: d["index"] for d in it.get_output_details()}
        self._batch1 = all(p.shape is not None and p.shape[:1] == (1,) for p in self.inputs)
        self._quant_in = dict(zip((t.name for t in signature.inputs), self._qin, strict=True))
        self._feed: list[tuple[int, Any, Quantization | None]] = []
        self._read: list[tuple[int, Quantization | None]] = []

    def bind(self, feeds: list[str], outputs: list[str]) -> None:
        """The inputs in the order ``call`` gets them, the outputs in the order it returns."""
        self._feed = [(*self._in[n], self._quant_in[n]) for n in feeds]
        self._read = [(self._out[n], self._qout.get(n)) for n in outputs]

    def begin_stream(self, rows: int) -> None:
        """From now on the model's state is carried from invoke to invoke, started afresh
        here, for each streamed batch; a stateful model streams one sample at a time."""
        if not self._stateful:
            return
        if rows != 1:
            raise ModelLoadError(
                model=FORMAT,
                reason=f"it holds its streaming state in its own variables, one sample's: "
                f"stream with batch_size 1, not {rows}",
            )
        self._carry = True
        self._reset()

    def _reset(self) -> None:
        it = self._interpreter
        it.reset_all_variables()
        for k in self._inits:  # an invoke of subgraph 0 leaves them unallocated
            it._interpreter.AllocateTensors(k)
            it._interpreter.Invoke(k)

    def call(self, *xs: Any) -> list[Any]:
        rows = int(xs[0].shape[0]) if xs else 1
        if rows == 1 or not self._batch1:
            return self._invoke(xs)
        answers = [self._invoke([x[k : k + 1] for x in xs]) for k in range(rows)]
        return [np.concatenate(parts) for parts in zip(*answers, strict=True)]

    def _invoke(self, xs: Any) -> list[Any]:
        it = self._interpreter
        if self._stateful and not self._carry:
            self._reset()
        for (index, dtype, q), x in zip(self._feed, xs, strict=True):
            value = quantize(x, q, dtype) if q is not None else x
            if tuple(it.get_tensor(index).shape) != tuple(value.shape):
                it.resize_tensor_input(index, value.shape)
                it.allocate_tensors()
            it.set_tensor(index, value)
        it.invoke()
        return [
            dequantize(it.get_tensor(i), q) if q is not None else it.get_tensor(i).copy()
            for i, q in self._read
        ]


def _port(t: TfliteTensor, q: Quantization | None) -> Port:
    return Port(name=t.name, dtype="float32" if q is not None else t.dtype, shape=t.shape)
