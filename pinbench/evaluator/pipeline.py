"""Pre- and post-processing from a manifest's typed steps: reference implementations in NumPy
(and Pillow for decoding image files and resizing), applied to whole datasets before any timed
region.

Arrays flow as ``(N, H, W, C)`` until a ``layout`` step; each step is a pure function of its
input, tested against golden outputs in ``tests/test_pipeline.py``. A dataset of files is
preprocessed one sample at a time (``preprocess_files``: the ``decode`` step reads an image
file with Pillow, sizes may differ until a resize or crop) and stacked at the end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt
from PIL import Image

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.evaluator.tokenizing import Encoded, TokenizeProblem, encode_texts
from pinbench.registry.manifest import (
    ColorMode,
    Crop,
    Decode,
    DType,
    Input,
    InputStep,
    Layout,
    Letterbox,
    MaxDimension,
    Normalize,
    OutputStep,
    Pad,
    Pool,
    Resize,
    Tokenize,
)

FloatArray = npt.NDArray[np.floating]
Array = npt.NDArray[np.generic]

PIPELINE_VERSION = 2
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


def decoder_of(data_format: str) -> str | None:
    """The library that decodes a dataset's files, with its version, or None for arrays."""
    if data_format != "images":
        return None
    import PIL

    return f"Pillow {PIL.__version__}"


def as_nhwc(samples: Array) -> Array:
    """Give samples a channel axis: ``(N, H, W)`` becomes ``(N, H, W, 1)``."""
    if samples.ndim == 3:
        return samples[..., np.newaxis]
    if samples.ndim != 4:
        raise PipelineError(
            step="input", reason=f"expected (N, H, W[, C]) samples, got {samples.shape}"
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
    if step.to in ("NCHW", "CHW"):
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
    resize or crop), then stack them; ``files`` are (name, local path) pairs and an
    ``images`` dataset needs the input's first step to be ``decode``."""
    steps = list(spec.steps)
    decode_step = steps.pop(0).decode if steps and steps[0].decode is not None else None
    if data_format == "images" and decode_step is None:
        raise PipelineError(
            step="decode",
            reason="the dataset's samples are image files: the input's steps must begin "
            "with a decode step (e.g. `- decode: {color_mode: rgb}`)",
        )
    out: list[Array] = []
    for i, (name, path) in enumerate(files):
        if decode_step is not None and data_format == "images":
            x = decode_file(path, decode_step, name=name)
        else:
            x = as_nhwc(_npy_sample(path, name)[np.newaxis])
            if decode_step is not None:
                x = decode(x, decode_step)
        for step in steps:
            x = _apply(x, step)
        if out and x.shape[1:] != out[0].shape[1:]:
            raise PipelineError(
                step="stack",
                reason=f"samples differ in shape after the steps ({files[0][0]}: "
                f"{list(out[0].shape[1:])}, {name}: {list(x.shape[1:])}): add a resize, crop, "
                "pad or letterbox that makes them one size",
            )
        out.append(x)
        if progress is not None:
            progress(i + 1)
    return _finish(np.concatenate(out) if out else np.empty((0,)), spec)


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
    x = as_nhwc(samples)
    for step in spec.steps:
        x = _apply(x, step)
    return _finish(x, spec)


def _apply(x: Array, step: InputStep) -> Array:
    if step.tokenize is not None:
        raise PipelineError(
            step="tokenize", reason="a tokenize step reads text samples: this dataset has none"
        )
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
