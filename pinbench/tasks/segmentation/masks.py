"""A segmentation dataset's mask files: one single-channel PNG per sample, each pixel a class
index or the dataset's ``ignore_index``.

Accepted PNG modes (Pillow's names), the pixel value being the mask value:

- ``L``: 8-bit grayscale (ADE20K, Cityscapes' ``labelTrainIds``);
- ``P``: 8-bit palette, the palette *index* is the value and the colours are ignored (Pascal
  VOC's ``SegmentationClass``);
- ``I;16`` (and Pillow's ``I`` for 16-bit grayscale): up to 65535, for more than 256 classes;
- ``1``: 1-bit, values 0 and 1 (a binary mask).

Colour (``RGB``, ``RGBA``, ``LA``) masks are refused: a colour is not a class index, and
guessing the palette would silently mislabel pixels. Like sample images, a mask of more than
``MAX_SAMPLE_PIXELS`` pixels (or a decompression bomb) is refused before it is decoded.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, UnidentifiedImageError

from pinbench.worker.image_steps import MAX_SAMPLE_PIXELS
from pinbench.worker.labels import LabelProblem

Mask = npt.NDArray[np.int32]
"""``(height, width)`` mask values."""

MODES = ("1", "L", "P", "I;16", "I;16B", "I;16L", "I")
"""The Pillow modes a mask PNG may have."""


def read_mask(path: Path, *, where: str) -> Mask:
    """The mask PNG at ``path`` (``where`` in the dataset) as its pixel values; a file that is
    not a whole single-channel PNG, or too large, is a ``LabelProblem`` naming it."""

    def refuse(reason: str) -> LabelProblem:
        return LabelProblem(path=where, reason=reason)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=["PNG"]) as image:
                if image.width * image.height > MAX_SAMPLE_PIXELS:
                    raise refuse(
                        f"{image.width}x{image.height} pixels, more than the {MAX_SAMPLE_PIXELS} "
                        "a mask may have"
                    )
                if image.mode not in MODES:
                    raise refuse(
                        f"mode {image.mode} is not a single-channel mask: save it as 8-bit "
                        "grayscale (L) or palette (P) PNG whose values are the class indexes"
                    )
                image.load()
                values = np.asarray(image)
    except UnidentifiedImageError:  # its message names the local (blob) path: not useful
        raise refuse("not a PNG image (masks are PNG files)") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise refuse(str(exc)) from None
    except (OSError, ValueError, SyntaxError) as exc:
        if isinstance(exc, LabelProblem):
            raise
        raise refuse(f"cannot decode the PNG: {exc}") from None
    return values.astype(np.int32)


def check_mask(
    mask: Mask, *, where: str, size: tuple[int, int], classes: int, ignore_index: int | None
) -> None:
    """``mask`` is of the sample's ``size`` (``(width, height)``) and every value a class index
    below ``classes`` or ``ignore_index``."""
    height, width = mask.shape
    if (width, height) != size:
        raise LabelProblem(
            path=where,
            reason=f"the mask is {width} x {height} but its sample image is {size[0]} x {size[1]}",
        )
    bad = (mask >= classes) | (mask < 0)
    if ignore_index is not None:
        bad &= mask != ignore_index
    if bad.any():
        row, col = (int(v[0]) for v in np.nonzero(bad))
        allowed = f"0..{classes - 1}" + (
            f" or the ignore_index {ignore_index}" if ignore_index is not None else ""
        )
        raise LabelProblem(
            path=where,
            reason=f"pixel (row {row}, column {col}) is {int(mask[row, col])}, not a class "
            f"index ({allowed}; {int(bad.sum())} such pixel(s))",
        )
