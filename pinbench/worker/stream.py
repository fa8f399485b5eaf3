"""Inputs that are not samples, at a run (decision 128): constants and zero states added to
every call, and a streamed input fed chunk by chunk with its states carried.

**Cutting** (before anything is timed, cached like any input): a streamed input's sample,
``(L, ...)`` after the input's steps, becomes ``ceil(L / chunk)`` windows of ``context +
chunk`` rows. Window ``k`` holds rows ``k * chunk - context`` up to ``(k + 1) * chunk``: rows
before the sample's first and after its last are zeros (silero-vad's ``OnnxWrapper``: a zero
context before the first chunk, the last chunk padded with zeros). Frame ``k`` of a sample is
its rows ``[k * chunk, (k + 1) * chunk)``. Every sample's windows are kept in one array, in
sample order; the input's per-sample array, what LoadGen's samples index, holds each sample's
``[first, end)`` rows of it (``offsets``, ``(N, 2)`` int64), so its frame count is
``end - first`` (``frame_counts``).

**Streaming** (``Fed.predict``, the timed call): one LoadGen sample is one dataset sample, a
whole stream, and one query's latency is the time to stream all of it: the model is called
once per chunk, each state input starting as zeros and then fed the output its ``next``
names, every constant and per-sample input fed unchanged with each chunk; a model that keeps
state of its own (a TensorFlow Lite model's variables) is told the stream begins
(``Predictor.begin_stream``) and carries it from chunk to chunk. The answer holds
every other output of each chunk, stacked along a new axis 1 (``(B, frames, ...)``). A batch
of samples is streamed together, for as many chunks as its longest sample has; a shorter
sample's rows repeat its last window past its end, and those frames are not its own (a task
reads ``frame_counts``). The timed region therefore holds, besides the framework calls, the
hand-over between them: one slice of the windows per chunk (a gather of the batch's rows at
batch size > 1), the state outputs put in the next call's inputs, and the stacking of the
outputs at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.registry.ports import Input, Output
from pinbench.worker.named import NamedInputs
from pinbench.worker.predictors.base import Batch, Outputs, Predictor
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.wrapping import Wrapping
from pinbench.worker.samples import Samples
from pinbench.worker.stop import Stop

Array = npt.NDArray[np.generic]
Offsets = npt.NDArray[np.int64]
Say = Callable[[str], None]
Cached = Callable[[Digest, Callable[[], Array]], tuple[Array, bool]]
"""``feed``'s cache: an array by its pipeline digest, computed when not cached; and whether it
was."""

MAX_WINDOW_VALUES = 1 << 29
"""The most values a streamed input's windows may hold (2 GiB of float32: a context much
longer than its chunk repeats every row ``(context + chunk) / chunk`` times), and a batch's
state."""


class StreamError(UserError):
    """A streamed input that cannot be cut, or a model whose streamed answers cannot be what
    the manifest says: names the input or output and what is wrong."""

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(f"streaming {name!r}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True, slots=True)
class State:
    name: str
    shape: tuple[int, ...]
    """Without the batch axis."""
    axis: int
    dtype: np.dtype[Any]
    next: str | None
    """The key of the output carried into it (``str`` of an index)."""
    port: str | int | None
    """That output as the manifest names it."""

    def zeros(self, batch: int) -> Array:
        shape = (*self.shape[: self.axis], batch, *self.shape[self.axis :])
        zeros = np.zeros(shape, dtype=self.dtype)
        zeros.flags.writeable = False
        return zeros


@dataclass(frozen=True, slots=True)
class Plan:
    """A model's inputs by kind (``registry.input_kinds``), as a run feeds them."""

    constants: dict[str, Array]
    states: tuple[State, ...]
    stream: Input | None
    per_sample: tuple[str, ...]
    """The inputs fed from the samples, the streamed one among them, in manifest order."""

    @property
    def carried(self) -> list[str]:
        return [s.next for s in self.states if s.next is not None]


def plan_of(inputs: Sequence[Input]) -> Plan | None:
    """The plan of a model's declared inputs, or None when every one is fed per sample."""
    constants = {
        str(i.name): _constant(i.value, i.element_type) for i in inputs if i.value is not None
    }
    states = tuple(
        State(
            str(i.name),
            tuple(i.shape),
            int(i.state.batch_axis or 0),
            np.dtype(i.element_type),
            None if i.state.next is None else str(i.state.next),
            i.state.next,
        )
        for i in inputs
        if i.state is not None
    )
    stream = next((i for i in inputs if i.stream is not None), None)
    if not constants and not states and stream is None:
        return None
    per_sample = tuple(str(i.name) for i in inputs if i.value is None and i.state is None)
    return Plan(constants, states, stream, per_sample)


def _constant(value: Any, element_type: str) -> Array:
    array = np.array(value, dtype=element_type)
    array.flags.writeable = False
    return array


# ---------------------------------------------------------------- cutting (untimed)


def cut(sample: Array, chunk: int, context: int) -> Array:
    """A sample ``(L, ...)`` as its ``ceil(L / chunk)`` windows ``(frames, context + chunk,
    ...)``: see the module's docstring."""
    length = int(sample.shape[0])
    frames = -(-length // chunk)
    padded = np.zeros((context + frames * chunk, *sample.shape[1:]), dtype=sample.dtype)
    padded[context : context + length] = sample
    rows = np.arange(frames)[:, np.newaxis] * chunk + np.arange(context + chunk)[np.newaxis, :]
    windows: Array = padded[rows]
    return windows


def prepare_stream(
    spec: Input,
    samples: Samples,
    digest: Digest,
    cached: Cached,
    say: Say,
    stop: Stop,
) -> tuple[Array, Array, bool]:
    """The streamed input's per-sample array (``offsets``), every sample's windows, and
    whether both came from the cache."""
    assert spec.stream is not None
    made: list[tuple[Array, Array]] = []

    def both() -> tuple[Array, Array]:
        if not made:
            made.append(_cut_all(spec, samples, say, stop))
        return made[0]

    windows, hit = cached(digest, lambda: both()[0])
    offsets_digest = Digest.of_bytes(canonical_json({"windows": digest.hex, "of": "offsets"}))
    offsets, offsets_hit = cached(offsets_digest, lambda: both()[1])
    return offsets, windows, hit and offsets_hit


def frame_counts(arrays: dict[str, Array], inputs: list[Input] | tuple[Input, ...]) -> Offsets:
    """Each sample's frame count, from the streamed input's ``offsets`` among a run's input
    arrays (``arrays`` as a scorer gets them)."""
    streamed = next(i for i in inputs if i.stream is not None)
    offsets: Offsets = np.asarray(arrays[str(streamed.name)], dtype=np.int64)
    counts: Offsets = offsets[:, 1] - offsets[:, 0]
    return counts


def _cut_all(spec: Input, samples: Samples, say: Say, stop: Stop) -> tuple[Array, Array]:
    assert spec.stream is not None
    name, chunk, context = str(spec.name), spec.stream.chunk, spec.stream.context
    say(
        f"cutting {len(samples)} samples of input {name!r} into chunks of {chunk} rows"
        + (f" (each with the {context} before it)" if context else "")
    )
    rows = decoded_samples(spec, samples, stop)
    total = 0
    for sample_name, sample in rows:
        if sample.ndim == 0 or sample.shape[0] == 0:
            raise StreamError(
                name=name,
                reason=f"sample {sample_name} has no rows to cut into chunks (shape "
                f"{list(sample.shape)}): a streamed sample is cut along its first axis",
            )
        total += -(-int(sample.shape[0]) // chunk) * (context + chunk) * math.prod(sample.shape[1:])
        if total > MAX_WINDOW_VALUES:
            raise StreamError(
                name=name,
                reason=f"the samples' windows of {context} + {chunk} rows would hold more than "
                f"{MAX_WINDOW_VALUES} values: lower stream.context, or stream fewer samples",
            )
    cuts = [cut(sample, chunk, context) for _, sample in rows]
    ends = np.cumsum([len(c) for c in cuts], dtype=np.int64)
    offsets = np.stack([ends - [len(c) for c in cuts], ends], axis=1).astype(np.int64)
    return np.ascontiguousarray(np.concatenate(cuts)), offsets


def decoded_samples(spec: Input, samples: Samples, stop: Stop) -> list[tuple[str, Array]]:
    """Each sample through the input's steps, one at a time (they differ in length)."""
    from pinbench.worker.pipeline import preprocess, preprocess_files

    if samples.texts is not None or samples.questions is not None:
        raise StreamError(name=str(spec.name), reason="text samples are not cut into chunks")
    if samples.files is None:
        assert samples.data is not None
        data = preprocess(samples.data, spec)
        return [(f"#{i}", data[i]) for i in range(len(data))]
    out: list[tuple[str, Array]] = []
    for f in samples.files:
        stop.check()  # a cancel or a time limit is honoured between files
        out.append((f.path, preprocess_files([(f.path, f.local)], samples.format, spec)[0]))
    return out


# ---------------------------------------------------------------- streaming (timed)


class _Call(NamedInputs):
    """One call's inputs by name: constants have no batch axis and a state has it elsewhere,
    so the arrays are not checked for one sample count (``NamedInputs`` checks)."""

    __slots__ = ()

    def __init__(self, arrays: dict[str, Array]) -> None:
        self.arrays = arrays


class Fed(Wrapping):
    """A predictor whose model has constant, state or streamed inputs: each call's inputs are
    completed (constants, states) and a streamed sample is fed chunk by chunk (see the
    module's docstring)."""

    NAME: ClassVar[str] = "fed"
    TITLE: ClassVar[str] = "inputs that are not samples"

    def __init__(self, inner: Predictor, plan: Plan, windows: Array | None) -> None:
        if plan.stream is not None and windows is None:
            raise ValueError("a streamed input needs its windows")
        super().__init__(inner)
        self.plan = plan
        self.windows = windows
        self._zeros: dict[int, dict[str, Array]] = {}

    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        """Open the wrapped predictor with the carried states' outputs read beside the
        declared ones (``registry.input_kinds`` requires them declared when a state has
        ``next``)."""
        extra = tuple(Output(name=s.port) for s in self.plan.states if s.port is not None)
        self.inner.open(replace(model, outputs=(*model.outputs, *extra)), options)

    def check_input(self, batch: Batch) -> None:
        per_sample, rows = self._per_sample(batch)
        call = self._first_call(per_sample, rows)
        self.inner.check_input(_Call(call))

    def first_predict(self, batch: Batch) -> Outputs:
        """The first batch's stream, its first call through the wrapped predictor's
        ``first_predict`` (the framework's complaint about the inputs as an input mismatch),
        its state outputs and the other outputs' batch axes checked."""
        per_sample, rows = self._per_sample(batch)
        got = self.inner.first_predict(_Call(self._first_call(per_sample, rows)))
        self._check_answer(got, rows)
        if self.plan.stream is None:
            return got
        return self.predict(batch)

    def predict(self, batch: Batch) -> Outputs:
        per_sample, rows = self._per_sample(batch)
        fixed = {**self.plan.constants, **self._zeros_for(rows)}
        if self.plan.stream is None:
            return self.inner.predict(_Call({**per_sample, **fixed}))
        name = str(self.plan.stream.name)
        offsets: Offsets = np.asarray(per_sample[name], dtype=np.int64)
        windows = self.windows
        assert windows is not None
        first = offsets[:, 0]
        counts = offsets[:, 1] - first
        frames = int(counts.max())
        if rows == 1:
            start = int(first[0])
            chunks: Any = (windows[start + k : start + k + 1] for k in range(frames))
        else:  # past its end, a sample repeats its last window
            index = np.minimum(first[:, None] + np.arange(frames), (offsets[:, 1] - 1)[:, None])
            chunks = (windows[index[:, k]] for k in range(frames))
        carried = [(s.name, s.next) for s in self.plan.states if s.next is not None]
        self.inner.begin_stream(rows)  # a model's own state starts afresh with each stream
        answers: dict[str, list[Array]] = {}
        call = {**per_sample, **fixed}
        for x in chunks:
            call[name] = x
            got = self.inner.predict(_Call(call))
            for state, output in carried:
                call[state] = got.pop(output)
            for key, value in got.items():
                answers.setdefault(key, []).append(value)
        return {key: np.stack(values, axis=1) for key, values in answers.items()}

    # ---------------------------------------------------------------- helpers

    def _per_sample(self, batch: Batch) -> tuple[dict[str, Array], int]:
        if isinstance(batch, NamedInputs):
            arrays = dict(batch.arrays)
        else:
            (only,) = self.plan.per_sample
            arrays = {only: batch}
        return arrays, len(next(iter(arrays.values())))

    def _zeros_for(self, rows: int) -> dict[str, Array]:
        if rows not in self._zeros:
            for state in self.plan.states:
                if math.prod(state.shape) * rows > MAX_WINDOW_VALUES:
                    raise StreamError(
                        name=state.name,
                        reason=f"a state of shape {list(state.shape)} for a batch of {rows} "
                        f"holds more than {MAX_WINDOW_VALUES} values: lower batch_size",
                    )
            self._zeros[rows] = {s.name: s.zeros(rows) for s in self.plan.states}
        return self._zeros[rows]

    def _first_call(self, per_sample: dict[str, Array], rows: int) -> dict[str, Array]:
        call = {**per_sample, **self.plan.constants, **self._zeros_for(rows)}
        if self.plan.stream is not None:
            name = str(self.plan.stream.name)
            assert self.windows is not None
            call[name] = self.windows[per_sample[name][:, 0]]
        return call

    def _check_answer(self, got: Outputs, rows: int) -> None:
        """Each carried output can be fed back as its state (same shape and element type);
        each other output has the batch on axis 0, where chunks are stacked after it."""
        for state in self.plan.states:
            if state.next is None:
                continue
            want = state.zeros(rows)
            out = np.asarray(got[state.next])
            if out.shape != want.shape or out.dtype != want.dtype:
                raise StreamError(
                    name=state.next,
                    reason=f"the output is {out.dtype.name} {list(out.shape)} and is fed back "
                    f"to state input {state.name!r}, which takes {want.dtype.name} "
                    f"{list(want.shape)} (its shape with the batch of {rows} at axis "
                    f"{state.axis})",
                )
        if self.plan.stream is None:
            return
        for key, value in got.items():
            if key in self.plan.carried:
                continue
            shape = list(np.shape(value))
            if not shape or shape[0] != rows:
                raise StreamError(
                    name=key,
                    reason=f"output of shape {shape} for a chunk of {rows} samples: a streamed "
                    "run stacks each chunk's outputs after their batch axis, which must be "
                    "their first",
                )
