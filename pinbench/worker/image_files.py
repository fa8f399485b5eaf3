"""Image files read with Pillow, refused by what their header says before any pixel is
decoded (format, size, mode)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from pinbench.registry.steps import (
    Decode,
)
from pinbench.worker.image_steps import MAX_SAMPLE_PIXELS
from pinbench.worker.pipeline_errors import Array, PipelineError

IMAGE_FORMATS = ["JPEG", "PNG", "WEBP", "BMP"]
"""The only Pillow decoders a dataset's image files reach (by content, not by name)."""

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
