"""Detector outputs as per-sample boxes, scores and classes in model-input pixels (``xyxy``).

Either one packed tensor with a declared layout (``decode``, layout names in ``LAYOUTS``):

- ``yolov8``: ``(N, 4 + C, A)``, per anchor ``cx, cy, w, h`` in input pixels then ``C`` class
  scores, no objectness (ultralytics YOLOv8/v11 ONNX exports, NudeNet);
- ``yolov5``: ``(N, A, 5 + C)``, per anchor ``cx, cy, w, h``, objectness, ``C`` class
  probabilities; a box's score is objectness times its best class's probability;

or separate outputs by name (``from_named``): boxes in any ``boxes.FORMATS``, scores, classes.
A box's class is its best-scoring column; NMS and thresholds come after (``nms``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pinbench.evaluator.detection.boxes import BoxArray, to_xyxy
from pinbench.evaluator.detection.errors import BadDetectorOutput, UnknownLayout
from pinbench.evaluator.detection.nms import nms


@dataclass(frozen=True, slots=True)
class Detections:
    """One sample's detections: ``boxes`` ``(n, 4)`` pixel ``xyxy``, ``scores`` ``(n,)``,
    ``classes`` ``(n,)`` integer class indices (columns of the model's output)."""

    boxes: BoxArray
    scores: npt.NDArray[np.float64]
    classes: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def take(self, indices: npt.NDArray[np.intp]) -> Detections:
        return Detections(self.boxes[indices], self.scores[indices], self.classes[indices])

    def suppressed(
        self,
        *,
        iou_threshold: float,
        score_threshold: float = 0.0,
        max_detections: int | None = None,
    ) -> Detections:
        """Per-class NMS (see ``nms.nms``), best first."""
        keep = nms(
            self.boxes,
            self.scores,
            self.classes,
            iou_threshold=iou_threshold,
            score_threshold=score_threshold,
            max_detections=max_detections,
        )
        return self.take(keep)


def _best_class(
    scores: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    classes = np.argmax(scores, axis=1).astype(np.int64)
    return np.take_along_axis(scores, classes[:, None], axis=1)[:, 0], classes


def _packed(output: npt.ArrayLike, layout: str, minimum: int) -> npt.NDArray[np.float64]:
    x = np.asarray(output, dtype=np.float64)
    if x.ndim != 3:
        raise BadDetectorOutput(layout=layout, shape=x.shape, reason="expected 3 dimensions")
    columns = x.shape[1] if layout == "yolov8" else x.shape[2]
    if columns <= minimum:
        raise BadDetectorOutput(
            layout=layout,
            shape=x.shape,
            reason=f"expected more than {minimum} values per anchor, got {columns}",
        )
    return x


def decode_yolov8(output: npt.ArrayLike) -> list[Detections]:
    x = _packed(output, "yolov8", 4)
    out = []
    for sample in x:
        rows = sample.T  # (A, 4 + C)
        scores, classes = _best_class(rows[:, 4:])
        out.append(Detections(to_xyxy(rows[:, :4], "cxcywh"), scores, classes))
    return out


def decode_yolov5(output: npt.ArrayLike) -> list[Detections]:
    x = _packed(output, "yolov5", 5)
    out = []
    for rows in x:  # (A, 5 + C)
        scores, classes = _best_class(rows[:, 5:] * rows[:, 4:5])
        out.append(Detections(to_xyxy(rows[:, :4], "cxcywh"), scores, classes))
    return out


LAYOUTS: dict[str, Callable[[npt.ArrayLike], list[Detections]]] = {
    "yolov8": decode_yolov8,
    "yolov5": decode_yolov5,
}


def decode(output: npt.ArrayLike, layout: str) -> list[Detections]:
    """A packed output as one ``Detections`` per sample, before any threshold or NMS."""
    if layout not in LAYOUTS:
        raise UnknownLayout(name=layout, known=tuple(LAYOUTS))
    return LAYOUTS[layout](output)


def from_named(
    boxes: npt.ArrayLike,
    scores: npt.ArrayLike,
    classes: npt.ArrayLike,
    *,
    box_format: str,
    normalized: bool = False,
    size: tuple[int, int] | None = None,
) -> Detections:
    """One sample's separate outputs: ``boxes`` ``(n, 4)`` in ``box_format``, ``scores``
    ``(n,)``, ``classes`` ``(n,)`` (floats holding whole numbers are accepted, as TensorFlow
    exports them); ``size`` is the input's ``(width, height)`` for normalized boxes."""
    b = to_xyxy(boxes, box_format, normalized=normalized, size=size)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    c = np.asarray(classes).reshape(-1)
    if not (b.shape[0] == s.shape[0] == c.shape[0]):
        raise BadDetectorOutput(
            layout="named",
            shape=(b.shape[0], s.shape[0], c.shape[0]),
            reason="boxes, scores and classes differ in length",
        )
    if c.size and not np.all(np.equal(np.mod(c, 1), 0)):
        raise BadDetectorOutput(layout="named", shape=c.shape, reason="classes are not integers")
    return Detections(b, s, c.astype(np.int64))
