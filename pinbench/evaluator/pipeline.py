"""Pre- and post-processing from a manifest's typed steps: reference implementations in NumPy
(and Pillow for decoding image files and resizing), applied to whole datasets before any timed
region.

An input of type image, or with an image step (``IMAGE_STEPS``), reads its samples as images:
arrays flow as ``(N, H, W, C)`` until a ``layout`` step, and an ``(N, H, W)`` array is read as
images of one channel. Any other input's samples keep the shape they have: only a step
(``expand_dims``) changes it. Each step is a pure function of its input, tested against golden
outputs in ``tests/test_pipeline.py``. A dataset of files is preprocessed one sample at a time
(``preprocess_files``: the ``decode`` step reads an image file with Pillow, ``decode_audio`` a
WAV file with ``wave``; sizes may differ until a resize, crop or fit_length) and stacked at the
end.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt
from PIL import Image

from pinbench import bounds as b
from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.evaluator import audio
from pinbench.evaluator.tokenizing import Encoded, TokenizeProblem, encode_texts
from pinbench.registry.manifest import step_name
from pinbench.registry.ports import Input
from pinbench.registry.steps import (
    ColorMode,
    Crop,
    Decode,
    DecodeAudio,
    DType,
    ExpandDims,
    FitLength,
    InputStep,
    Layout,
    Letterbox,
    MaxDimension,
    Normalize,
    OutputStep,
    Pad,
    Pool,
    Resample,
    Resize,
    ResizeHeight,
    ResizeMultiple,
    Tokenize,
)

FloatArray = npt.NDArray[np.floating]
Array = npt.NDArray[np.generic]

PIPELINE_VERSION = 3
"""Bump when a step's reference implementation changes: cached inputs are keyed by it."""

_RESAMPLE = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "area": Image.Resampling.BOX,
    "lanczos": Image.Resampling.LANCZOS,
}


class PipelineError(UserError):
    def __init__(self, *, step: str, reason: str) -> None:
        super().__init__(f"preprocessing step {step}: {reason}")
        self.step = step
        self.reason = reason


class InputShape(PipelineError):
    """Samples of a shape the input does not read as it is declared: names the input and
    what of its declaration (a step, its type) needs another shape; ``step`` is that step's
    name, or empty."""

    def __init__(self, *, input: str, step: str, reason: str) -> None:
        UserError.__init__(self, f"input {input!r}: {reason}")
        self.input = input
        self.step = step
        self.reason = reason


def pipeline_digest(
    spec: Input, *, decoder: str | None = None, files: dict[str, str] | None = None
) -> Digest:
    """Identifies the preprocessing: its steps, the target dtype, the code version and, for
    files decoded by a library, that library and its version (``decoder``), and the sha256 of
    every model file a step reads (``files``: a tokenizer), by path."""
    data: dict[str, object] = {"version": PIPELINE_VERSION, "input": msgspec.to_builtins(spec)}
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


IMAGE_STEPS = (
    "decode",
    "resize",
    "max_dimension",
    "crop",
    "pad",
    "letterbox",
    "layout",
    "color_mode",
    "resize_height",
    "resize_multiple",
)
"""The steps that read images ``(N, H, W, C)``."""


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


CHANNELS_FIRST = ("NCHW", "CHW")


def as_images(samples: Array, spec: Input) -> Array:
    """An input's samples as it reads them: for an input of type image or with an image step,
    images ``(N, H, W, C)``, where ``(N, H, W)`` are images of one channel (the README says
    so); for any other input, exactly as they are (its steps alone change a shape)."""
    image_steps = [name for name in map(step_name, spec.steps) if name in IMAGE_STEPS]
    if spec.type != "image" and not image_steps:
        return samples
    if samples.ndim == 3:
        return samples[..., np.newaxis]
    if samples.ndim != 4:
        why = f"its step {image_steps[0]}" if image_steps else "its type image"
        raise InputShape(
            input=str(spec.name),
            step=image_steps[0] if image_steps else "",
            reason=f"{why} reads images, (H, W) or (H, W, C) per sample; the dataset's "
            f"samples are {list(samples.shape[1:])}: "
            + (
                "give it samples of that shape"
                if image_steps
                else "declare it `type: tensor` to feed the samples as they are"
            ),
        )
    return samples


def decode(x: Array, step: Decode) -> Array:
    return color_mode(
        x, ColorMode(to=step.color_mode), source="rgb" if x.shape[-1] == 3 else "grayscale"
    )


def color_mode(x: Array, step: ColorMode, *, source: str = "rgb") -> Array:
    channels = x.shape[-1]
    if step.to == "grayscale":
        if channels == 1:
            return x
        weights = np.array([0.299, 0.587, 0.114], dtype=np.float64)
        if source == "bgr":
            weights = weights[::-1]
        gray = (x.astype(np.float64) @ weights)[..., np.newaxis]
        return (
            gray.astype(x.dtype)
            if np.issubdtype(x.dtype, np.floating)
            else np.rint(gray).astype(x.dtype)
        )
    if channels == 1:
        return np.repeat(x, 3, axis=-1)
    if channels != 3:
        raise PipelineError(step="color_mode", reason=f"expected 1 or 3 channels, got {channels}")
    return x[..., ::-1] if (step.to == "bgr") != (source == "bgr") else x


def resize(x: Array, step: Resize) -> Array:
    height, width = step.size
    if step.keep_aspect_ratio:
        h, w = x.shape[1], x.shape[2]
        scale = max(height / h, width / w)
        x = _resize_to(x, max(height, round(h * scale)), max(width, round(w * scale)), step.method)
        return crop(x, Crop(size=(height, width)))
    return _resize_to(x, height, width, step.method)


def _resize_to(x: Array, height: int, width: int, method: str) -> Array:
    if x.shape[1:3] == (height, width):
        return x
    resample = _RESAMPLE[method]
    out = np.empty((x.shape[0], height, width, x.shape[3]), dtype=np.float32)
    for i, sample in enumerate(x):
        for c in range(sample.shape[-1]):
            image = Image.fromarray(sample[..., c].astype(np.float32), mode="F")
            out[i, ..., c] = np.asarray(image.resize((width, height), resample))
    return (
        out
        if np.issubdtype(x.dtype, np.floating)
        else np.clip(np.rint(out), 0, 255).astype(x.dtype)
    )


def max_dimension(x: Array, step: MaxDimension) -> Array:
    """The longer side to ``step.size``, the aspect ratio kept (each side rounded, at least 1
    pixel: ``detection.boxes.MaxDimension`` is the same geometry)."""
    h, w = x.shape[1], x.shape[2]
    s = step.size / max(h, w)
    return _resize_to(x, max(1, round(h * s)), max(1, round(w * s)), step.method)


def crop(x: Array, step: Crop) -> Array:
    height, width = step.size
    h, w = x.shape[1], x.shape[2]
    if height > h or width > w:
        raise PipelineError(step="crop", reason=f"crop {height}x{width} is larger than {h}x{w}")
    top, left = (h - height) // 2, (w - width) // 2
    return x[:, top : top + height, left : left + width, :]


def _place(x: Array, height: int, width: int, placement: str, value: float) -> Array:
    """``x`` on a ``height x width`` canvas of ``value``: at the top-left corner, or centred
    with odd padding's extra pixel right and bottom (``detection.boxes``' geometry)."""
    h, w = x.shape[1], x.shape[2]
    top, left = ((height - h) // 2, (width - w) // 2) if placement == "center" else (0, 0)
    out = np.full((x.shape[0], height, width, x.shape[3]), value, dtype=x.dtype)
    out[:, top : top + h, left : left + w, :] = x
    return out


def pad(x: Array, step: Pad) -> Array:
    """Pad to a square of the longer side, no scaling."""
    side = max(x.shape[1], x.shape[2])
    return _place(x, side, side, step.placement, step.value)


def letterbox(x: Array, step: Letterbox) -> Array:
    """Scale to fit ``size`` keeping the aspect ratio (each side rounded), then pad to it."""
    height, width = step.size
    h, w = x.shape[1], x.shape[2]
    s = min(height / h, width / w)
    x = _resize_to(x, max(1, round(h * s)), max(1, round(w * s)), step.method)
    return _place(x, height, width, step.placement, step.value)


def resize_height(x: Array, step: ResizeHeight) -> Array:
    """PaddleOCR's ``resize_norm_img``: to ``height`` with the width ``ceil(height * w / h)``
    (at most ``max_width``), then padded on the right with ``value`` to ``max_width``."""
    h, w = x.shape[1], x.shape[2]
    width = min(math.ceil(step.height * (w / h)), step.max_width)
    if np.issubdtype(x.dtype, np.integer) and step.value != int(step.value):
        raise PipelineError(
            step="resize_height",
            reason=f"pad value {step.value} is not a whole number and the samples are "
            f"{x.dtype}: pad with a whole value, or put the step after normalize",
        )
    resized = _resize_to(x, step.height, width, step.method)
    return _place(resized, step.height, step.max_width, "top-left", step.value)


def resize_multiple(x: Array, step: ResizeMultiple, *, sample: str | None = None) -> Array:
    """PaddleOCR's det resize: to the size ``step.size_of`` gives for the samples' own (a
    sample file is preprocessed alone, so each image gets its own); a size past
    ``MAX_SAMPLE_PIXELS`` or a side past 16384 (``limit_type: min`` on a thin image) is
    refused."""
    h, w = x.shape[1], x.shape[2]
    width, height = step.size_of(w, h)
    if width * height > MAX_SAMPLE_PIXELS or max(width, height) > b.PIXELS.high:
        what = sample if sample is not None else f"a {w}x{h} sample"
        raise PipelineError(
            step="resize_multiple",
            reason=f"{what} would be resized to {width}x{height}, more than the "
            f"{MAX_SAMPLE_PIXELS} pixels (and {b.PIXELS.high} a side) a sample may have: "
            "lower limit_side, or use limit_type max",
        )
    return _resize_to(x, height, width, step.method)


def normalize(x: Array, step: Normalize) -> FloatArray:
    out = x.astype(np.float32)
    if step.scale is not None:
        return out * np.float32(step.scale)
    mean = np.asarray(step.mean, dtype=np.float32)
    std = np.asarray(step.std if step.std is not None else [1.0], dtype=np.float32)
    for name, values in (("mean", mean), ("std", std)):
        if values.size not in (1, out.shape[-1]):
            raise PipelineError(
                step="normalize",
                reason=f"{name} has {values.size} values for {out.shape[-1]} channel(s)",
            )
    return (out - mean) / std


def layout(x: Array, step: Layout) -> Array:
    if step.to in CHANNELS_FIRST:
        return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))
    return x


def dtype(x: Array, step: DType) -> Array:
    return x.astype(step.to)


IMAGE_FORMATS = ["JPEG", "PNG", "WEBP", "BMP"]
"""The only Pillow decoders a dataset's image files reach (by content, not by name)."""
MAX_SAMPLE_PIXELS = 40_000_000
"""The largest image a dataset may hold (a 7,300 x 5,480 photo); Pillow's own bomb guard is
at 89 million. A decoded sample is held in memory with all the others."""
IMAGE_MODES = ("1", "L", "LA", "P", "RGB", "RGBA")
"""The Pillow modes a sample image may have: 1 to 8 bits per channel, grey, palette or RGB,
with or without alpha (which ``decode`` drops, as ``convert("RGB")`` in torchvision's and
Keras' loaders). Others are refused, not converted: 16/32-bit and float (``I;16``, ``I``,
``F``: 8 bits would saturate), CMYK (no colour profile is applied), YCbCr, LAB, HSV."""
_PNG_BIT_DEPTH = 24
"""Where a PNG's bit depth is: its signature (8 bytes), IHDR's length and type (8), width and
height (8). Pillow opens a 16-bit RGB(A) or grey-alpha PNG in an 8-bit mode."""


class ImageRefused(PipelineError):
    """A sample image file that cannot or may not be decoded: names the file."""

    def __init__(self, *, name: str, problem: str) -> None:
        super().__init__(step="decode", reason=f"cannot decode {name}: {problem}")
        self.name = name
        self.problem = problem


def image_header(path: Path, *, name: str) -> tuple[int, int, str]:
    """Width, height and Pillow mode of an image file, from its header alone; an image that is
    not JPEG/PNG/WebP/BMP, too large, of more than 8 bits per channel or of a mode not in
    ``IMAGE_MODES`` is refused."""
    with _open_image(path, name) as image:
        return image.width, image.height, image.mode


@contextlib.contextmanager
def _open_image(path: Path, name: str) -> Iterator[Image.Image]:
    import warnings

    from PIL import UnidentifiedImageError

    def refuse(problem: str) -> ImageRefused:
        return ImageRefused(name=name, problem=problem)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=IMAGE_FORMATS) as image:
                if image.width * image.height > MAX_SAMPLE_PIXELS:
                    raise refuse(
                        f"{image.width}x{image.height} pixels, more than the {MAX_SAMPLE_PIXELS} "
                        "a sample may have"
                    )
                problem = _mode_problem(image, path)
                if problem is not None:
                    raise refuse(f"{problem}: convert the image to 8-bit RGB or grayscale")
                yield image
    except UnidentifiedImageError:  # its message names the local (blob) path: not useful
        raise refuse("not a JPEG, PNG, WebP or BMP image") from None
    except Image.DecompressionBombError as exc:
        raise refuse(str(exc)) from None
    except (Image.DecompressionBombWarning, OSError, ValueError, SyntaxError) as exc:
        raise refuse(str(exc)) from None


def _mode_problem(image: Image.Image, path: Path) -> str | None:
    """Why an image's pixels are not read as they are stored, or None (``IMAGE_MODES``)."""
    if image.mode.startswith(("I", "F")):
        return f"mode {image.mode} (more than 8 bits per channel) is not read"
    if image.format == "PNG":
        with path.open("rb") as f:
            header = f.read(_PNG_BIT_DEPTH + 1)
        depth = header[_PNG_BIT_DEPTH]
        if depth > 8:
            return (
                f"a {depth}-bit PNG (more than 8 bits per channel, which Pillow would read as "
                f"{image.mode}, cut to 8 bits) is not read"
            )
    if image.mode not in IMAGE_MODES:
        return f"mode {image.mode} is not read (only {', '.join(IMAGE_MODES)})"
    return None


def decode_file(path: Path, step: Decode, *, name: str) -> Array:
    """One image file as a ``(1, H, W, C)`` uint8 array in the step's colour mode; a file
    that is not a whole JPEG/PNG/WebP/BMP image, or is a decompression bomb, is refused."""
    mode = "L" if step.color_mode == "grayscale" else "RGB"
    with _open_image(path, name) as image:
        try:
            pixels = np.asarray(image.convert(mode))
        except (OSError, ValueError, SyntaxError) as exc:
            raise ImageRefused(name=name, problem=str(exc)) from None
    x = pixels[np.newaxis, ..., np.newaxis] if pixels.ndim == 2 else pixels[np.newaxis]
    return x[..., ::-1] if step.color_mode == "bgr" else x


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
    read = _file_reader(data_format, spec, steps)

    def each() -> Iterator[tuple[str, Array]]:
        for i, (name, path) in enumerate(files):
            x = read(path, name)
            for step in steps:
                x = _apply(x, step, sample=name)
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


_ENCODING_FIELDS = {
    "input_ids": "ids",
    "attention_mask": "attention_mask",
    "token_type_ids": "type_ids",
}


def tokenizer_version() -> str:
    import tokenizers

    return f"tokenizers {tokenizers.__version__}, lines split on LF"


Encodings = dict[tuple[str, int, bool], Encoded]
"""Texts already tokenized, by (tokenizer path, max_length, truncation): the inputs of one
model that read the ids, the attention mask and the token type ids tokenize once."""


def preprocess_texts(
    texts: Sequence[str],
    spec: Input,
    files: dict[str, Path],
    stop: Callable[[], None] | None = None,
    encodings: Encodings | None = None,
) -> Array:
    """Tokenize text samples for one input: its first step is ``tokenize`` (the tokenizer
    file among the model's ``files``), padded to ``max_length``; a longer text without
    ``truncation`` is refused, naming it. A ``dtype`` step may follow. Tokenizing runs in a
    child process that ``stop`` (called while it runs; it raises to stop) ends at once
    (``pinbench.evaluator.tokenizing``)."""
    steps = list(spec.steps)
    if not steps or steps[0].tokenize is None:
        raise PipelineError(
            step="tokenize",
            reason=f"input {spec.name!r} reads text samples: its steps must begin with a "
            "tokenize step (e.g. `- tokenize: {tokenizer: tokenizer.json, max_length: 128}`)",
        )
    step = steps[0].tokenize
    assert step is not None
    x: Array = _tokenize(texts, step, files, stop, {} if encodings is None else encodings)
    for rest in steps[1:]:
        if rest.dtype is None:
            raise PipelineError(
                step="tokenize", reason="only a dtype step may follow tokenize on text samples"
            )
        x = dtype(x, rest.dtype)
    return _finish(x, spec)


MAX_TOKENS = 2**28
"""The most token positions (samples x max_length) one input may hold: 2 GiB as int64."""


def _tokenize(
    texts: Sequence[str],
    step: Tokenize,
    files: dict[str, Path],
    stop: Callable[[], None] | None,
    encodings: Encodings,
) -> Array:
    total = len(texts) * step.max_length
    if total > MAX_TOKENS:
        raise PipelineError(
            step="tokenize",
            reason=f"{len(texts)} samples x max_length {step.max_length} = {total} tokens, "
            f"more than the {MAX_TOKENS} an input may hold",
        )
    key = (step.tokenizer, step.max_length, step.truncation)
    if key not in encodings:
        try:
            encodings[key] = encode_texts(
                texts,
                tokenizer=files[step.tokenizer],
                name=step.tokenizer,
                max_length=step.max_length,
                truncation=step.truncation,
                stop=stop,
            )
        except TokenizeProblem as exc:
            raise PipelineError(step="tokenize", reason=exc.reason) from None
    return encodings[key].field(_ENCODING_FIELDS[step.output]).astype(np.int64)


def _npy_sample(path: Path, name: str) -> Array:
    try:
        array: Array = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise PipelineError(step="decode", reason=f"cannot read {name}: {exc}") from None
    return array


def _finish(x: Array, spec: Input) -> Array:
    if x.dtype != np.dtype(spec.element_type):
        x = x.astype(spec.element_type)
    return np.ascontiguousarray(x)


def preprocess(samples: Array, spec: Input) -> Array:
    """Apply the input's steps to all samples; the result has the input's element type."""
    check_order(spec.steps)
    x = as_images(samples, spec)
    for step in spec.steps:
        x = _apply(x, step)
    return _finish(x, spec)


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


def softmax(x: FloatArray, axis: int = -1) -> FloatArray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    out: FloatArray = e / np.sum(e, axis=axis, keepdims=True)
    return out


def pool(x: Array, step: Pool, inputs: dict[str, Array]) -> FloatArray:
    """Token states ``(N, T, D)`` to ``(N, D)``: the mean over the tokens the mask keeps (the
    mask input, ``(N, T)`` of 0/1), or the first token's state."""
    if x.ndim != 3:
        raise PipelineError(step="pool", reason=f"expected (N, tokens, D) states, got {x.shape}")
    states = x.astype(np.float32)
    if step.mode == "cls":
        out: FloatArray = states[:, 0, :]
        return out
    assert step.mask is not None
    mask = inputs[step.mask].astype(np.float32)
    if mask.shape != states.shape[:2]:
        raise PipelineError(
            step="pool",
            reason=f"mask {step.mask!r} has shape {list(mask.shape)}, the states "
            f"{list(states.shape)}",
        )
    if not np.isin(mask, (0.0, 1.0)).all() or (mask.sum(axis=1) == 0).any():
        raise PipelineError(
            step="pool",
            reason=f"mask {step.mask!r} must be 0/1 with at least one kept token per sample "
            "(feed it the tokenizer's attention_mask)",
        )
    summed = np.einsum("ntd,nt->nd", states, mask)
    kept = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
    pooled: FloatArray = summed / kept
    return pooled


def l2_normalize(x: Array) -> FloatArray:
    values = x.astype(np.float32)
    norms = np.linalg.norm(values, axis=-1, keepdims=True)
    out: FloatArray = values / np.maximum(norms, 1e-12)
    return out


def postprocess(
    outputs: Array, steps: list[OutputStep], inputs: dict[str, Array] | None = None
) -> Array:
    """Apply output steps: to a ``(N, classes)`` array ``topk``/``argsort`` give class
    indices; ``pool`` (with the named mask among ``inputs``) and ``l2_normalize`` turn token
    states into sentence embeddings."""
    x = outputs
    for step in steps:
        if step.pool is not None:
            x = pool(x, step.pool, inputs or {})
        elif step.l2_normalize is not None:
            x = l2_normalize(x)
        elif step.softmax is not None:
            x = softmax(x.astype(np.float32), step.softmax.axis)
        elif step.argsort is not None:
            xf = x.astype(np.float64)
            order = np.argsort(-xf if step.argsort.descending else xf, axis=-1, kind="stable")
            x = order
        elif step.topk is not None:
            x = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., : step.topk.k]
    return x
