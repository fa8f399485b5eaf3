"""A class map on the output's grid brought back onto the original image (nearest).

Each original pixel's centre is mapped forward with the sample's ``Transform`` (the input's
resize, max_dimension, crop, pad and letterbox steps: ``detection.boxes``) into the model
input, then into the output's grid spread evenly over the input (``detection.masks``'
``original_to_grid``): the cell it falls in gives its class. The grid may be coarser or finer
than the input (a stride-8 head, an upsampled head) by about the same factor on both axes;
another shape is a misread layout and refused. Original pixels outside the input (a crop cut
them away) get ``NO_CLASS``: the model said nothing about them, so they count as wrong.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.tasks.detection.boxes import Transform
from pinbench.tasks.detection.masks import original_to_grid
from pinbench.tasks.segmentation.classes import ClassMap
from pinbench.tasks.segmentation.errors import BadSegmentationOutput

NO_CLASS = -1
"""The class of an original pixel that the model input does not cover."""


def check_grid(
    grid: tuple[int, int], input_size: tuple[int, int], *, output: str, shape: tuple[int, ...]
) -> None:
    """The output's ``(height, width)`` grid covers the model input's ``(height, width)`` at
    one scale on both axes: each side is the input's divided by the width's factor, give or
    take a pixel of rounding (513 -> 65 for a stride-8 head is fine; a transposed grid is
    not)."""
    (grid_h, grid_w), (input_h, input_w) = grid, input_size
    factor = input_w / grid_w
    if abs(input_h / factor - grid_h) > 1.0:
        raise BadSegmentationOutput(
            output=output,
            shape=shape,
            reason=f"its {grid_h} x {grid_w} grid does not cover the {input_h} x {input_w} "
            "model input at one scale (height x width): check the section's layout",
        )


def to_original(grid: npt.NDArray[np.int32], transform: Transform) -> ClassMap:
    """One sample's ``(h, w)`` class map on the original ``(height, width)`` image, pixels
    outside the model input ``NO_CLASS``."""
    rows, cols = original_to_grid(transform, grid.shape[0], grid.shape[1])
    picked = grid[np.clip(rows, 0, None)[:, None], np.clip(cols, 0, None)[None, :]]
    inside = (rows >= 0)[:, None] & (cols >= 0)[None, :]
    return np.where(inside, picked, NO_CLASS).astype(np.int32)
