"""mIoU and pixel accuracy from a confusion matrix accumulated over the whole dataset.

``matrix[t, p]`` counts the pixels of true class ``t`` predicted as ``p``; the last column
counts those predicted as no class (outside the model input). Pixels whose truth is the
dataset's ``ignore_index`` are not counted at all. Then, as mmsegmentation's ``IoUMetric``
and torchmetrics' ``JaccardIndex`` (``task="multiclass", average="macro"``, with the
``ignore_index``) compute them (not torchmetrics' ``segmentation`` mean IoU, a mean of
per-image IoUs; ``tests/test_segmentation.py`` compares with both):

- ``IoU(c) = matrix[c, c] / (row c + column c - matrix[c, c])``, over the whole dataset (not
  a mean of per-image IoUs); a class with an empty union (neither in any truth nor predicted
  on any counted pixel) has no IoU and is left out of the mean;
- ``miou``: the mean of the defined IoUs;
- ``pixel_accuracy``: the diagonal over every counted pixel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pinbench.tasks.segmentation.geometry import NO_CLASS


@dataclass
class Confusion:
    classes: int
    ignore_index: int | None = None
    matrix: npt.NDArray[np.int64] = field(init=False)

    def __post_init__(self) -> None:
        self.matrix = np.zeros((self.classes, self.classes + 1), dtype=np.int64)

    def add(self, truth: npt.NDArray[np.integer], predicted: npt.NDArray[np.integer]) -> None:
        """One image's pixels: ``truth`` class indexes (or ``ignore_index``), ``predicted``
        class indexes or ``NO_CLASS``, both of the image's shape."""
        if truth.shape != predicted.shape:
            raise ValueError(f"truth {truth.shape} and prediction {predicted.shape} differ")
        keep = np.ones(truth.shape, dtype=bool)
        if self.ignore_index is not None:
            keep = truth != self.ignore_index
        t = truth[keep].astype(np.int64)
        p = predicted[keep].astype(np.int64)
        p = np.where(p == NO_CLASS, self.classes, p)
        width = self.classes + 1
        counts = np.bincount(t * width + p, minlength=self.classes * width)
        self.matrix += counts.reshape(self.classes, width)

    @property
    def counted(self) -> int:
        return int(self.matrix.sum())

    def ious(self) -> list[float | None]:
        """Each class's IoU, None where its union is empty."""
        hits = np.diag(self.matrix[:, : self.classes])
        union = self.matrix.sum(axis=1) + self.matrix[:, : self.classes].sum(axis=0) - hits
        return [None if u == 0 else float(h / u) for h, u in zip(hits, union, strict=True)]

    def metrics(self) -> dict[str, float]:
        """``miou`` and ``pixel_accuracy`` (NaN when nothing was counted: the caller refuses
        that)."""
        defined = [v for v in self.ious() if v is not None]
        hits = int(np.trace(self.matrix[:, : self.classes]))
        return {
            "miou": float(np.mean(defined)) if defined else float("nan"),
            "pixel_accuracy": hits / self.counted if self.counted else float("nan"),
        }
