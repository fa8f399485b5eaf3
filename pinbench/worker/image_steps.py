"""The image steps as pure NumPy/Pillow functions of an array: colour mode, resize, crop, pad,
letterbox, normalise, layout, dtype (samples flow as (N, H, W, C) until a layout step)."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

from pinbench import bounds as b
from pinbench.registry.manifest import step_name
from pinbench.registry.ports import Input
from pinbench.registry.steps import (
    ColorMode,
    Crop,
    Decode,
    DType,
    Layout,
    Letterbox,
    MaxDimension,
    Normalize,
    Pad,
    Resize,
    ResizeHeight,
    ResizeMultiple,
)
from pinbench.worker.pipeline_errors import Array, FloatArray, InputShape, PipelineError

_RESAMPLE = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "area": Image.Resampling.BOX,
    "lanczos": Image.Resampling.LANCZOS,
}

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
        x = _scaled(x, max(height, round(h * scale)), max(width, round(w * scale)), step)
        return crop(x, Crop(size=(height, width)))
    return _scaled(x, height, width, step)


def _scaled(x: Array, height: int, width: int, step: Resize) -> Array:
    if step.antialias is False:  # method bilinear: ``Resize`` refuses any other
        return resize_linear(x, height, width)
    return _resize_to(x, height, width, step.method)


def _linear_taps(size: int, out: int) -> tuple[Array, Array, FloatArray]:
    """Along one axis of ``size`` pixels resized to ``out``: each output pixel's two source
    pixels and the second one's weight, as OpenCV's ``INTER_LINEAR`` maps them (half-pixel
    centres, ``src = (dst + 0.5) * size / out - 0.5``, clamped to the first and last pixel)."""
    src = (np.arange(out, dtype=np.float64) + 0.5) * (size / out) - 0.5
    src = np.clip(src, 0.0, size - 1.0)
    first = np.floor(src).astype(np.intp)
    return first, np.minimum(first + 1, size - 1), (src - first).astype(np.float32)


def resize_linear(x: Array, height: int, width: int) -> Array:
    """Bilinear without antialiasing, as ``cv2.resize(..., interpolation=cv2.INTER_LINEAR)``
    and ``cv2.dnn.blobFromImage`` resize: each output pixel from the two nearest source pixels
    on each axis (``_linear_taps``), whatever the scale, in float32 (across, then down) on the
    samples' values; integer samples are rounded back (``rint``, clipped to 0..255) as
    ``_resize_to`` rounds Pillow's. OpenCV's 8-bit path is fixed-point and rounds differently
    in its SIMD and scalar code: the two agree within 1 grey level (the tests hold them so)."""
    if x.shape[1:3] == (height, width):
        return x
    top, bottom, wy = _linear_taps(x.shape[1], height)
    left, right, wx = _linear_taps(x.shape[2], width)
    f = x.astype(np.float32)
    across = wx[np.newaxis, np.newaxis, :, np.newaxis]
    rows = f[:, :, left] * (np.float32(1) - across) + f[:, :, right] * across
    down = wy[np.newaxis, :, np.newaxis, np.newaxis]
    out = rows[:, top] * (np.float32(1) - down) + rows[:, bottom] * down
    return (
        out
        if np.issubdtype(x.dtype, np.floating)
        else np.clip(np.rint(out), 0, 255).astype(x.dtype)
    )


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


MAX_SAMPLE_PIXELS = 40_000_000
"""The largest image a dataset may hold (a 7,300 x 5,480 photo); Pillow's own bomb guard is
at 89 million. A decoded sample is held in memory with all the others."""
