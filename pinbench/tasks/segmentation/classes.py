"""A segmentation output read into one class per pixel, per its ``segmentation`` section.

Shapes, per sample (the leading batch axis is the samples'):

- ``logits``: ``(C, H, W)`` (layout NCHW) or ``(H, W, C)`` (NHWC), ``C`` the dataset's class
  count; the class is the argmax (the lowest index on a tie, as NumPy's and PyTorch's argmax);
  a NaN or infinite logit is refused (the argmax of a NaN is undefined), as is such a
  probability;
- ``classes``: ``(H, W)``, or with a channel axis of 1 where the layout puts it; whole numbers
  (a float tensor of whole numbers is accepted), each below the class count;
- ``probability``: ``(H, W)`` (or a channel axis of 1) of foreground scores; class 1 where the
  score is at least the threshold, compared in the output's own precision
  (``tasks.threshold``: a float32 0.7 meets threshold 0.7), else 0 (a two-class dataset).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pinbench.registry.ports import Segmentation
from pinbench.tasks.segmentation.errors import BadSegmentationOutput
from pinbench.tasks.threshold import at_least

ClassMap = npt.NDArray[np.int32]
"""``(N, H, W)`` class indexes on the output's grid."""


def grid_of(output: npt.NDArray[np.generic], section: Segmentation, name: str) -> tuple[int, int]:
    """The output's ``(height, width)`` grid, its shape checked against the section."""
    shape = tuple(int(d) for d in np.asarray(output).shape)

    def refuse(reason: str) -> BadSegmentationOutput:
        return BadSegmentationOutput(output=name, shape=shape, reason=reason)

    channel = 1 if section.layout == "NCHW" else 3
    if section.form == "logits":
        if len(shape) != 4:
            raise refuse(f"logits are (N, C, H, W) or (N, H, W, C) ({section.layout} here)")
    elif len(shape) == 4:
        if shape[channel] != 1:
            raise refuse(
                f"a {section.form} map has one value per pixel: (N, H, W), or a channel axis "
                f"of 1 (axis {channel} for layout {section.layout})"
            )
    elif len(shape) != 3:
        raise refuse(f"a {section.form} map is (N, H, W)")
    spatial = [d for i, d in enumerate(shape[1:], start=1) if len(shape) == 3 or i != channel]
    if min(spatial) < 1:
        raise refuse("an empty grid")
    return spatial[0], spatial[1]


def class_count(output: npt.NDArray[np.generic], section: Segmentation) -> int | None:
    """How many classes logits score (None for the other forms)."""
    if section.form != "logits":
        return None
    shape = np.asarray(output).shape
    return int(shape[1] if section.layout == "NCHW" else shape[-1])


def class_maps(
    output: npt.NDArray[np.generic],
    section: Segmentation,
    name: str,
    *,
    classes: int,
    samples: Sequence[str] = (),
) -> ClassMap:
    """Each sample's class per pixel on the output's grid; a class index outside
    ``0..classes-1`` (form ``classes``) is refused naming the sample (by its name in
    ``samples`` where given, else its index)."""
    grid_of(output, section, name)
    x = np.asarray(output)
    channel = 1 if section.layout == "NCHW" else 3
    if section.form != "classes":
        _finite(x, name, samples)
    if section.form == "logits":
        picked: ClassMap = np.argmax(x, axis=channel).astype(np.int32)
        return picked
    if x.ndim == 4:
        x = np.squeeze(x, axis=channel)
    if section.form == "probability":
        return at_least(x, section.threshold).astype(np.int32)
    values = x.astype(np.float64)
    bad = (values != np.floor(values)) | (values < 0) | (values >= classes)
    if bad.any():
        sample, row, col = (int(v[0]) for v in np.nonzero(bad))
        raise BadSegmentationOutput(
            output=name,
            shape=tuple(int(d) for d in x.shape),
            reason=f"sample {samples[sample] if samples else sample} has class "
            f"{float(values[sample, row, col])!r} at (row {row}, column {col}): classes are "
            f"whole numbers 0..{classes - 1}",
        )
    return values.astype(np.int32)


def _finite(x: npt.NDArray[np.generic], name: str, samples: Sequence[str]) -> None:
    """Refuse logits or probabilities that are not finite numbers: NumPy's argmax takes a NaN
    as the largest score and a NaN probability meets no threshold, so the pixel's class would
    be a guess recorded as the model's."""
    if not np.issubdtype(x.dtype, np.floating):
        return
    bad = ~np.isfinite(x)
    if bad.any():
        where = tuple(int(v[0]) for v in np.nonzero(bad))
        sample = samples[where[0]] if samples else where[0]
        raise BadSegmentationOutput(
            output=name,
            shape=tuple(int(d) for d in x.shape),
            reason=f"sample {sample} has {float(x[where])!r} at {list(where[1:])}: the class "
            "of that pixel, so mIoU and pixel accuracy, are undefined",
        )
