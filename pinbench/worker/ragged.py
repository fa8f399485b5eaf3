"""An input whose samples keep sizes of their own: fed one at a time (decision 133).

A ``resize_multiple`` step sizes each image by its own size (PaddleOCR's det resize), so the
samples of one input may differ in shape after the steps. Such an input is preprocessed one
sample file at a time and kept, in the cache and in memory, as every sample's values in one
flat array beside each sample's shape (``(N, axes)`` int64). When every sample comes out the
same shape, that is one stacked array as for any input, and any batch size takes it. Otherwise
it is a ``Ragged``: the scenario slices it as it slices an array, and ``x[i : i + 1]`` is
sample ``i`` with a batch axis of one, a view of the flat array (no copy in the timed
region). A batch of more than one sample cannot be formed from samples of different shapes,
so any slice of more than one is refused (``RaggedBatch``), and the first batch is sliced
before anything is timed: a run of such samples needs ``batch_size: 1``. A scorer gets the
input's entry as an object array of the samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.registry.manifest import step_name
from pinbench.registry.ports import Input

Array = npt.NDArray[np.generic]
Cached = Callable[[Digest, Callable[[], Array]], tuple[Array, bool]]
"""``feed``'s cache: an array by its digest, computed when not cached; and whether it was."""
Each = Callable[[], Iterator[tuple[str, Array]]]
"""Each sample's name and its array after the input's steps (a batch of one), in order."""


def per_image(spec: Input) -> bool:
    """Whether the input's samples keep sizes of their own: it sizes each image by its own (a
    ``resize_multiple`` step), or decodes waveforms without bringing them to one length (a
    ``decode_audio`` step and no ``fit_length``: each clip at its own length, issue 86)."""
    names = {step_name(s) for s in spec.steps}
    return "resize_multiple" in names or ("decode_audio" in names and "fit_length" not in names)


class RaggedBatch(UserError):
    """A batch asked of samples that differ in shape: names the input and two samples."""

    def __init__(self, *, input: str, first: str, other: str, batch: int) -> None:
        super().__init__(
            f"input {input!r}: its samples keep sizes of their own after its steps ({first}; "
            f"{other}), so they are fed one at a time and cannot form a batch of {batch}: run "
            "with batch_size 1, or make them one size (a resize or letterbox instead of "
            "resize_multiple, a fit_length for waveforms), or pad each batch (the input's "
            "pad_batch, for samples that differ in their last axis only)"
        )
        self.input = input
        self.first = first
        self.other = other
        self.batch = batch


class Ragged:
    """Samples of different shapes in one flat array, sliced one at a time (see the module's
    docstring)."""

    __slots__ = ("_samples", "dtype", "input", "names", "pad", "shape")

    def __init__(
        self,
        values: Array,
        shapes: Array,
        *,
        input: str,
        names: Sequence[str],
        pad: float | None = None,
    ) -> None:
        sizes = [math.prod(int(d) for d in s) for s in shapes]
        ends = np.cumsum(sizes)
        self._samples = [
            values[end - size : end].reshape(tuple(int(d) for d in shape))
            for size, end, shape in zip(sizes, ends, shapes, strict=True)
        ]
        self.input = input
        self.names = list(names)
        self.shape: tuple[int, ...] = (len(self._samples),)
        """Only the sample count: what the scenario runner reads."""
        self.dtype = values.dtype
        self.pad = pad
        """Where set (the input's ``pad_batch``), a batch of several samples is each padded
        at the end of its last axis to the batch's longest with this value."""

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, index: Any) -> Array:
        """Sample ``i`` with a batch axis of one, for ``x[i : i + 1]`` (or ``x[[i]]``)."""
        picked: Sequence[int]
        if isinstance(index, slice):
            picked = range(len(self))[index]
        else:
            picked = [int(i) for i in np.atleast_1d(np.asarray(index, dtype=np.int64))]
        if len(picked) == 1:
            sample: Array = self._samples[picked[0]][np.newaxis]
            return sample
        if self.pad is None or not picked:
            raise self._refusal(max(2, len(picked)))
        return self._padded(picked)

    def lengths(self, index: Any) -> list[int]:
        """The last-axis length of each sample ``index`` picks (as ``__getitem__`` does)."""
        picked = range(len(self))[index] if isinstance(index, slice) else np.atleast_1d(index)
        return [int(self._samples[int(i)].shape[-1]) for i in picked]

    def _padded(self, picked: Sequence[int]) -> Array:
        """The picked samples padded at the end of their last axis to the longest: what a
        pipeline's collate does (a copy, inside the timed region)."""
        samples = [self._samples[i] for i in picked]
        first = samples[0].shape[:-1]
        other = next((i for i, s in enumerate(samples) if s.shape[:-1] != first), None)
        if other is not None:  # only the last axis is padded
            raise RaggedBatch(
                input=self.input,
                first=f"{self.names[picked[0]]}: {list(samples[0].shape)}",
                other=f"{self.names[picked[other]]}: {list(samples[other].shape)}",
                batch=len(picked),
            )
        longest = max(s.shape[-1] for s in samples)
        assert self.pad is not None
        out = np.full((len(samples), *first, longest), self.pad, dtype=self.dtype)
        for row, s in zip(out, samples, strict=True):
            row[..., : s.shape[-1]] = s
        return out

    def __array__(self, *args: Any, **kwargs: Any) -> Array:
        """Never one array (training stacks every sample): refused as a batch of all."""
        raise self._refusal(len(self))

    def samples(self) -> Array:
        """Each sample's array (without a batch axis), as an object array: what a scorer
        gets as the input's entry."""
        out = np.empty(len(self), dtype=object)
        for i, sample in enumerate(self._samples):
            out[i] = sample
        return out

    def _refusal(self, batch: int) -> RaggedBatch:
        first = self._samples[0].shape
        other = next(i for i, s in enumerate(self._samples) if s.shape != first)
        return RaggedBatch(
            input=self.input,
            first=f"{self.names[0]}: {list(first)}",
            other=f"{self.names[other]}: {list(self._samples[other].shape)}",
            batch=batch,
        )


def prepare_ragged(
    spec: Input,
    digest: Digest,
    cached: Cached,
    each: Each,
    names: Sequence[str],
    *,
    pad: float | None = None,
) -> tuple[Array | Ragged, Array, bool]:
    """The input as the scenario slices it (one stacked array when every sample comes out
    the same shape, else a ``Ragged``), its entry for a scorer, and whether it came from the
    cache: the values under the pipeline digest, the shapes under one derived from it. A
    batch pads with ``pad`` (a tokenizer's), else the input's ``pad_batch``."""
    made: list[tuple[Array, Array]] = []

    def both() -> tuple[Array, Array]:
        if not made:
            made.append(_flatten(spec, each()))
        return made[0]

    values, hit = cached(digest, lambda: both()[0])
    shapes_digest = Digest.of_bytes(canonical_json({"values": digest.hex, "of": "shapes"}))
    shapes, shapes_hit = cached(shapes_digest, lambda: both()[1])
    if shapes.ndim != 2 or len(shapes) != len(names) or values.size != _total(shapes):
        values, shapes = both()  # a cache entry of another run's making: not trusted
        hit = shapes_hit = False
    if not len(names):
        return values, values, hit and shapes_hit
    if (shapes == shapes[0]).all():
        stacked = values.reshape((len(names), *(int(d) for d in shapes[0])))
        return stacked, stacked, hit and shapes_hit
    if pad is None and spec.pad_batch is not None:
        pad = spec.pad_batch.value
    fed = Ragged(values, shapes, input=str(spec.name), names=names, pad=pad)
    return fed, fed.samples(), hit and shapes_hit


def _total(shapes: Array) -> int:
    return int(sum(math.prod(int(d) for d in s) for s in shapes))


def _flatten(spec: Input, samples: Iterator[tuple[str, Array]]) -> tuple[Array, Array]:
    """Every sample's values in one flat array of the input's element type, and each one's
    shape (without the batch axis)."""
    flat: list[Array] = []
    shapes: list[tuple[int, ...]] = []
    for _, x in samples:
        flat.append(np.ravel(x.astype(spec.element_type, copy=False)))
        shapes.append(tuple(int(d) for d in x.shape[1:]))
    if not flat:
        return np.empty((0,), dtype=spec.element_type), np.empty((0, 0), dtype=np.int64)
    return np.ascontiguousarray(np.concatenate(flat)), np.asarray(shapes, dtype=np.int64)
