"""Pre- and post-processing from a manifest's typed steps: reference implementations in NumPy (and
Pillow for decoding image files and resizing), applied to whole datasets before any timed
region.

An input of type image, or with an image step (``IMAGE_STEPS``), reads its samples as images:
arrays flow as ``(N, H, W, C)`` until a ``layout`` step, and an ``(N, H, W)`` array is read as
images of one channel. Any other input's samples keep the shape they have: only a step
(``expand_dims``, ``take``, ``reshape``, ``views``: ``worker.row_steps``) changes it. Each step
is a pure function of its input, tested against golden outputs in ``tests/test_pipeline.py``. A
dataset of files is preprocessed one sample at a time (``preprocess_files``: the ``decode``
step reads an image file with Pillow, ``decode_audio`` a WAV file with ``wave``; sizes may
differ until a resize, crop or fit_length) and stacked at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec
import numpy as np

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.registry.manifest import step_name
from pinbench.registry.ports import Input
from pinbench.registry.steps import (
    DecodeAudio,
    ExpandDims,
    FitLength,
    InputStep,
    Resample,
    ZeroMeanUnitVar,
)
from pinbench.worker import audio, row_steps
from pinbench.worker.image_files import decode_file
from pinbench.worker.image_steps import (
    CHANNELS_FIRST,
    IMAGE_STEPS,
    as_images,
    color_mode,
    crop,
    decode,
    dtype,
    layout,
    letterbox,
    max_dimension,
    normalize,
    pad,
    resize,
    resize_height,
    resize_multiple,
)
from pinbench.worker.pipeline_errors import Array, InputShape, PipelineError, _finish

PIPELINE_VERSION = 3
"""Bump when a step's reference implementation changes: cached inputs are keyed by it."""


def pipeline_digest(
    spec: Input, *, decoder: str | None = None, files: dict[str, str] | None = None
) -> Digest:
    """Identifies the preprocessing: its steps, the target dtype, the code version and, for
    files decoded by a library, that library and its version (``decoder``), and the sha256 of
    every model file a step reads (``files``: a tokenizer), by path."""
    from pinbench.registry.late_fields import drop_unset_inputs

    plain = msgspec.to_builtins(spec)
    drop_unset_inputs([plain])  # a field added later, unset, leaves a cached input's key alone
    data: dict[str, object] = {"version": PIPELINE_VERSION, "input": plain}
    if decoder is not None:
        data["decoder"] = decoder
    if files:
        data["files"] = files
    return Digest.of_bytes(canonical_json(data))


def decoder_of(data_format: str, specs: Sequence[Input] = ()) -> str | None:
    """The library that decodes a dataset's files, with its version (and, for audio that an
    input resamples, the resampler's), or None for arrays."""
    if data_format == "audio":
        resamples = any(s.resample is not None for spec in specs for s in spec.steps)
        tail = f", {audio.resampler_version()}" if resamples else ""
        return audio.decoder_version() + tail
    if data_format != "images":
        return None
    import PIL

    return f"Pillow {PIL.__version__}"


def check_order(steps: Sequence[InputStep]) -> None:
    """Image steps read channels last, ``(N, H, W, C)``: after a ``layout`` to ``NCHW`` or
    ``CHW`` they would resize, crop or normalize the wrong axes and give a number for inputs
    the model was never meant to see; such an order is refused, naming the step."""
    layouts = [(i, s.layout.to) for i, s in enumerate(steps) if s.layout is not None]
    first, to = next(((i, to) for i, to in layouts if to in CHANNELS_FIRST), (None, ""))
    if first is None:
        return
    for step in steps[first + 1 :]:
        name = step_name(step)
        per_channel = step.normalize is not None and (
            len(step.normalize.mean) > 1 or len(step.normalize.std or []) > 1
        )
        if name in IMAGE_STEPS or per_channel:
            raise PipelineError(
                step=name,
                reason=f"comes after `layout: {to}` but reads images channels last (N, H, W, C): "
                "put the layout step after it",
            )


def check_view_crop(spec: Input) -> None:
    """A ``crop`` view cuts a sample's last two axes: an image input's are width and channels
    until a channels-first ``layout``, so a crop view before one is refused."""
    views = spec.steps[-1].views if spec.steps else None
    if views is None or not any(op.crop for ops in views.transforms for op in ops):
        return
    images = spec.type == "image" or any(step_name(s) in IMAGE_STEPS for s in spec.steps)
    first = any(s.layout is not None and s.layout.to in CHANNELS_FIRST for s in spec.steps)
    if images and not first:
        raise PipelineError(
            step="views",
            reason="a crop view cuts a sample's last two axes, and images are (H, W, C) until "
            "a `layout: NCHW` (or CHW) step: put one before views",
        )


def preprocess_files(
    files: Sequence[tuple[str, Path]],
    data_format: str,
    spec: Input,
    progress: Callable[[int], None] | None = None,
) -> Array:
    """Read, decode and preprocess sample files one by one (they may differ in size until a
    resize, crop or fit_length), then stack them; ``files`` are (name, local path) pairs. An
    ``images`` dataset needs the input's first step to be ``decode``, an ``audio`` dataset
    ``decode_audio``."""
    out: list[Array] = []
    for name, x in preprocess_each(files, data_format, spec, progress):
        if out and x.shape[1:] != out[0].shape[1:]:
            fix = (
                "a fit_length step"
                if data_format == "audio"
                else "a resize, crop, pad or letterbox"
            )
            raise InputShape(
                input=str(spec.name),
                step="",
                reason=f"samples differ in shape after the steps ({files[0][0]}: "
                f"{list(out[0].shape[1:])}, {name}: {list(x.shape[1:])}): add {fix} that "
                "makes them one size",
            )
        out.append(x)
    return _finish(np.concatenate(out) if out else np.empty((0,)), spec)


def preprocess_each(
    files: Sequence[tuple[str, Path]],
    data_format: str,
    spec: Input,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[str, Array]]:
    """Each sample file read, decoded and through the input's steps, one at a time: its name
    and a batch of one (not yet in the input's element type); ``progress`` is told how many
    are done after each."""
    steps = list(spec.steps)
    check_order(steps)
    check_view_crop(spec)
    read = _file_reader(data_format, spec, steps)

    viewed = bool(steps) and steps[-1].views is not None

    def each() -> Iterator[tuple[str, Array]]:
        kept = 0
        for i, (name, path) in enumerate(files):
            x = read(path, name)
            for step in steps:
                x = _apply(x, step, sample=name)
            kept += x.size
            if viewed:  # every file's views are kept for the run: bounded over them all
                row_steps.check_kept(kept, len(files))
            yield name, x
            if progress is not None:
                progress(i + 1)

    return each()


def _leading(steps: list[InputStep], name: str, what: str, example: str) -> InputStep:
    """The decoding step a file dataset's samples need first, taken off ``steps``."""
    if not steps or getattr(steps[0], name) is None:
        raise PipelineError(
            step=name,
            reason=f"the dataset's samples are {what}: the input's steps must begin with a "
            f"{name} step (e.g. `- {name}: {example}`)",
        )
    return steps.pop(0)


def _file_reader(
    data_format: str, spec: Input, steps: list[InputStep]
) -> Callable[[Path, str], Array]:
    """How one sample file becomes a batch of one; the decoding steps it performs are taken
    off the front of ``steps``."""
    first = steps[0] if steps else None
    if data_format == "audio":
        audio = _leading(steps, "decode_audio", "WAV files", "{channel: mix, rate: 16000}")
        assert audio.decode_audio is not None
        resample = steps.pop(0).resample if steps and steps[0].resample is not None else None
        return _wav_reader(audio.decode_audio, resample)
    if data_format == "files":
        reading = _leading(steps, "read_bytes", "files of any kind", "{length: 2048}").read_bytes
        assert reading is not None
        from pinbench.worker.file_bytes import read_bytes

        return lambda path, name: read_bytes(path, reading, name=name)
    if data_format == "images":
        image_step = _leading(steps, "decode", "image files", "{color_mode: rgb}").decode
        assert image_step is not None
        return lambda path, name: decode_file(path, image_step, name=name)
    decode_step = steps.pop(0).decode if first is not None and first.decode is not None else None

    def read_npy(path: Path, name: str) -> Array:
        x = as_images(_npy_sample(path, name)[np.newaxis], spec)
        return decode(x, decode_step) if decode_step is not None else x

    return read_npy


def _wav_reader(step: DecodeAudio, resample: Resample | None) -> Callable[[Path, str], Array]:
    """``decode_audio`` (and a ``resample`` after it): a WAV file as a ``(1, T)`` float32
    waveform at the input's declared rate."""

    def read(path: Path, name: str) -> Array:
        wave, rate = audio.read_wav(path, name=name, channel=step.channel)
        if step.rate is not None and rate != step.rate:
            fix = (
                "resample the file"
                if resample is not None
                else f"add `- resample: {{rate: {step.rate}}}` after decode_audio (and leave "
                "out decode_audio's rate), or resample the file"
            )
            raise audio.AudioRefused(
                name=name,
                problem=f"its sample rate is {rate} Hz, the input declares {step.rate} Hz "
                f"(decode_audio.rate): {fix}",
            )
        if resample is not None:
            wave = audio.resample(wave, rate_from=rate, rate_to=resample.rate, name=name)
        return wave[np.newaxis]

    return read


def _npy_sample(path: Path, name: str) -> Array:
    try:
        array: Array = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise PipelineError(step="decode", reason=f"cannot read {name}: {exc}") from None
    return array


def preprocess(samples: Array, spec: Input) -> Array:
    """Apply the input's steps to all samples; the result has the input's element type."""
    check_order(spec.steps)
    check_view_crop(spec)
    x = as_images(samples, spec)
    for step in spec.steps:
        x = _apply(x, step)
    return _finish(x, spec)


def zero_mean_unit_var(x: Array, step: ZeroMeanUnitVar) -> Array:
    """Waveforms ``(N, T)``, each to zero mean and unit variance in float32, as transformers'
    ``Wav2Vec2FeatureExtractor.zero_mean_unit_var_norm`` computes one unpadded waveform."""
    if x.ndim != 2:
        raise PipelineError(
            step="zero_mean_unit_var",
            reason=f"reads waveforms, one axis per sample; the samples here are "
            f"{list(x.shape[1:])}",
        )
    rows = np.asarray(x, dtype=np.float32)
    out = [(r - r.mean()) / np.sqrt(r.var() + np.float32(step.epsilon)) for r in rows]
    return np.stack(out).astype(np.float32) if out else rows


def fit_length(x: Array, step: FitLength, *, sample: str | None = None) -> Array:
    """Waveforms ``(N, T)`` to ``(N, length)``: padded at the end with ``value``, or cut to
    their first ``length`` samples when ``crop`` (else a longer one is refused)."""
    if x.ndim != 2:
        raise PipelineError(
            step="fit_length",
            reason=f"reads waveforms, one axis per sample; the samples here are "
            f"{list(x.shape[1:])}",
        )
    n = x.shape[1]
    if n > step.length and not step.crop:
        what = sample if sample is not None else "the samples"
        raise PipelineError(
            step="fit_length",
            reason=f"{what} is {n} samples long, more than length {step.length}: set "
            f"`crop: true` to keep the first {step.length}, or raise length",
        )
    if n >= step.length:
        return x[:, : step.length]
    out = np.full((x.shape[0], step.length), step.value, dtype=np.float64).astype(x.dtype)
    out[:, :n] = x
    return out


def expand_dims(x: Array, step: ExpandDims) -> Array:
    """A new axis of size 1 at ``axis`` of each sample's axes (the batch axis not counted)."""
    rank = x.ndim - 1
    if not -(rank + 1) <= step.axis <= rank:
        raise PipelineError(
            step="expand_dims",
            reason=f"axis {step.axis} is outside a sample of {rank} axes "
            f"({list(x.shape[1:])}): give one from {-(rank + 1)} to {rank}",
        )
    return np.expand_dims(x, step.axis + 1 if step.axis >= 0 else step.axis)


def _apply(x: Array, step: InputStep, *, sample: str | None = None) -> Array:
    name = step_name(step)
    if step.tokenize is not None:
        raise PipelineError(
            step="tokenize", reason="a tokenize step reads text samples: this dataset has none"
        )
    if name == "read_bytes":
        raise PipelineError(
            step=name,
            reason="reads sample files of any kind (data.format files) as the input's first "
            "step: this dataset's samples are not such files, or the step is not first",
        )
    if name in ("decode_audio", "resample"):
        raise PipelineError(
            step=name,
            reason="reads WAV files (data.format audio) as the input's first steps: this "
            "dataset's samples are not audio files, or the step is not where it goes",
        )
    if name in IMAGE_STEPS and x.ndim != 4:
        raise PipelineError(
            step=name,
            reason=f"reads images (N, H, W, C); the samples here are {list(x.shape[1:])} "
            "per sample",
        )
    if step.fit_length is not None:
        return fit_length(x, step.fit_length, sample=sample)
    if step.take is not None:
        return row_steps.take(x, step.take)
    if step.reshape is not None:
        return row_steps.reshape(x, step.reshape)
    if step.views is not None:
        return row_steps.views(x, step.views)
    if step.zero_mean_unit_var is not None:
        return zero_mean_unit_var(x, step.zero_mean_unit_var)
    if step.expand_dims is not None:
        return expand_dims(x, step.expand_dims)
    if step.decode is not None:
        return decode(x, step.decode)
    if step.resize is not None:
        return resize(x, step.resize)
    if step.max_dimension is not None:
        return max_dimension(x, step.max_dimension)
    if step.crop is not None:
        return crop(x, step.crop)
    if step.pad is not None:
        return pad(x, step.pad)
    if step.letterbox is not None:
        return letterbox(x, step.letterbox)
    if step.normalize is not None:
        return normalize(x, step.normalize)
    if step.layout is not None:
        return layout(x, step.layout)
    if step.color_mode is not None:
        return color_mode(x, step.color_mode)
    if step.resize_height is not None:
        return resize_height(x, step.resize_height)
    if step.resize_multiple is not None:
        return resize_multiple(x, step.resize_multiple, sample=sample)
    assert step.dtype is not None
    return dtype(x, step.dtype)
