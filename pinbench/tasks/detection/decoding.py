"""A detection output's answers decoded per its section's layout into each sample's
candidate detections (``layouts`` for packed and separate outputs, ``regions`` for a
probability map, ``heads`` for raw YOLOX, GFL and SSD heads), and the first answer's check
that they fit the declared classes, before anything is timed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from pinbench.registry.ports import PROBABILITY_MAP, Detection, Input, OutputName
from pinbench.tasks.detection.errors import BadDetectorOutput, DetectionSetupError
from pinbench.tasks.detection.layouts import Detections, decode, decode_separate

if TYPE_CHECKING:
    from pinbench.tasks.detection.score import Plan

Answer = Mapping[str, npt.NDArray[np.generic]]
CHANNELS_FIRST = ("NCHW", "CHW")


def input_size(spec: Input, array: npt.NDArray[np.generic] | None) -> tuple[int, int] | None:
    """The model input's ``(width, height)`` from a batch of its samples (4 axes, channels
    first after a ``layout`` step to NCHW or CHW, else last); None where it cannot tell."""
    if array is None or np.ndim(array) != 4:
        return None
    layouts = [s.layout.to for s in spec.steps if s.layout is not None]
    shape = np.shape(array)
    if layouts and layouts[-1] in CHANNELS_FIRST:
        return int(shape[3]), int(shape[2])
    return int(shape[2]), int(shape[1])


def class_columns(output: npt.NDArray[np.generic], layout: str) -> int:
    """How many classes a packed output scores (its shape decides)."""
    shape = np.asarray(output).shape
    if len(shape) != 3:
        return -1
    if layout == "yolov8":
        return int(shape[1] - 4)
    return int(shape[2] - 5)


def scored_classes(answer: Answer, plan: Plan) -> tuple[int, list[int]]:
    """How many classes a raw head's answer scores, and the shape that says so."""
    detection = plan.detection
    if detection.gfl is not None:
        name = str(detection.gfl.heads[0].scores)
    elif detection.ssd is not None:
        name = str(detection.scores)
    else:
        name = plan.name
    shape = [int(d) for d in np.shape(answer[name])]
    if len(shape) != 3:
        raise setup_error(
            name, f"layout {detection.layout} reads (N, anchors, values), the shape is {shape}"
        )
    if detection.layout == "yolox":
        return shape[2] - 5, shape
    background = detection.ssd.background if detection.ssd is not None else None
    return shape[2] - (background is not None), shape


def setup_error(output: str, reason: str) -> Exception:
    return DetectionSetupError(what=f"output {output!r}", reason=reason)


def check_columns(answer: Answer, plan: Plan, size: tuple[int, int] | None = None) -> None:
    """A first answer's detections fit the declared classes: a packed output or raw head
    scores as many classes as the labels name (and an SSD's anchors, or a grid head's grid
    where ``size``, the model input's (w, h), is known, are its answer's); separate classes
    index into them; a probability map is ``(N, 1, H, W)`` probabilities of the one class
    named."""
    layout = plan.detection.layout
    grid = layout in ("yolox", "gfl")
    if layout in ("separate", "ssd") or (grid and size is not None):
        decoded(answer, plan, None if size is None else [size] * _batch(answer, plan))
    if layout == "separate":
        return
    if layout == PROBABILITY_MAP:
        _check_map(answer[plan.name], plan)
        return
    if layout in ("yolox", "gfl", "ssd"):
        columns, shape = scored_classes(answer, plan)
    else:
        output = answer[plan.name]
        shape = list(np.asarray(output).shape)
        if len(shape) != 3:
            yolov8 = layout == "yolov8"
            packed = "(N, 4 + classes, anchors)" if yolov8 else "(N, anchors, 5 + classes)"
            raise setup_error(
                plan.name, f"layout {layout} reads {packed}, the output has shape {shape}"
            )
        columns = class_columns(output, layout)
    if columns != len(plan.cats.names):
        raise setup_error(
            plan.name,
            f"layout {layout} of shape {shape} scores {columns} classes but "
            f"{named_by(plan)} {len(plan.cats.names)}",
        )


def named_by(plan: Plan) -> str:
    """Who names the classes, for messages: "its labels file names", or the metadata's key."""
    labels = plan.output.labels
    if labels is not None and labels.metadata is not None:
        return f"its ONNX metadata {labels.metadata!r} names"
    return "its labels file names"


def _batch(answer: Answer, plan: Plan) -> int:
    return int(np.shape(answer[plan.name])[0]) if np.ndim(answer[plan.name]) else 0


def decoded(
    outputs: Answer, plan: Plan, sizes: Sequence[tuple[int, int]] | None = None
) -> list[Detections]:
    """Every sample's detections, before thresholds and NMS, their classes checked against
    the labels; ``sizes``: each sample's model-input (w, h), which a grid head needs."""
    detection = plan.detection
    if detection.layout == PROBABILITY_MAP:
        return _map_regions(outputs[plan.name], detection)
    if detection.layout in ("yolox", "gfl", "ssd"):
        return _heads(outputs, plan, sizes)
    if detection.layout != "separate":
        return decode(outputs[plan.name], detection.layout)

    def named(role: OutputName | None) -> npt.NDArray[np.generic] | None:
        return None if role is None else outputs[str(role)]

    found = decode_separate(
        outputs[plan.name],
        outputs[str(detection.scores)],
        named(detection.classes),
        named(detection.count),
        named(detection.masks),
        box_format=detection.box_format,
    )
    known = len(plan.cats.names)
    out = []
    for i, sample in enumerate(found):
        bad = sample.classes[sample.classes >= known]
        if bad.size:
            raise setup_error(
                str(detection.classes),
                f"sample {i} has class index {int(bad[0])} but "
                f"{named_by(plan).replace('its ', 'the ', 1)} {known} "
                f"classes (0..{known - 1})",
            )
        # A negative class marks padding, not a detection (GluonCV pads with class -1).
        out.append(sample.take(np.flatnonzero(sample.classes >= 0)))
    return out


def _heads(
    outputs: Answer, plan: Plan, sizes: Sequence[tuple[int, int]] | None
) -> list[Detections]:
    """A raw head's candidates, sample by sample (each its own input size)."""
    from pinbench.tasks.detection import heads

    detection, floor = plan.detection, plan.detection.score_threshold
    if detection.ssd is not None:
        assert plan.anchors is not None  # read by ``plan`` for this layout
        names = (plan.name, str(detection.scores))
        return heads.decode_ssd(
            outputs[names[0]], outputs[names[1]], plan.anchors, detection.ssd, names, floor
        )
    count = _batch(outputs, plan)
    if sizes is None or len(sizes) != count:
        raise BadDetectorOutput(
            layout=detection.layout,
            shape=tuple(np.shape(outputs[plan.name])),
            reason="the model input's size of each sample is needed to lay out the grid",
        )
    out: list[Detections] = []
    for i, size in enumerate(sizes):
        one = {k: np.asarray(v)[i : i + 1] for k, v in outputs.items()}
        if detection.yolox is not None:
            out += heads.decode_yolox(one[plan.name], size, detection.yolox.strides)
        else:
            gfl = detection.gfl
            assert gfl is not None
            parts = [(str(h.scores), str(h.boxes)) for h in gfl.heads]
            levels = [(one[a], one[b]) for a, b in parts]
            out += heads.decode_gfl(levels, parts, gfl, size, floor)
    return out


def _check_map(output: npt.NDArray[np.generic], plan: Plan) -> None:
    from pinbench.tasks.detection.regions import check_map

    check_map(output)
    if len(plan.cats.names) != 1:
        raise setup_error(
            plan.name,
            f"layout {PROBABILITY_MAP} scores one class but {named_by(plan)} "
            f"{len(plan.cats.names)}: name the one class the map is of",
        )


def _map_regions(output: npt.NDArray[np.generic], detection: Detection) -> list[Detections]:
    """A probability map's regions as boxes in fractions of the map (``regions``)."""
    from pinbench.tasks.detection.regions import Settings, regions

    section = detection.probability_map
    assert section is not None  # the manifest fills it in for this layout
    settings = Settings(
        threshold=section.threshold,
        box_threshold=section.box_threshold,
        unclip_ratio=section.unclip_ratio,
        min_size=section.min_size,
        max_candidates=section.max_candidates,
    )
    height, width = np.asarray(output).shape[2:4]
    size = np.array([width, height, width, height], dtype=np.float64)
    return [found.scaled(1.0 / size) for found in regions(output, settings)]
