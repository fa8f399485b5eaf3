"""Scoring a detection run: the model's packed output (or separate outputs) decoded per its
``detection`` section (layout, normalized boxes, score threshold, NMS), the boxes checked to be
boxes at all (``plausible``: a layout that does not match the output fails the run), instance
masks brought onto the original image (``masks``), each sample's boxes mapped back onto its
original image through the geometry of the input's steps and clipped to it, model classes
matched to the COCO categories by name, and COCO metrics computed with pycocotools.

Runs after the scenario, outside any timed region. A sample's geometry is computed from its
image file's header (its size) and the input's steps, never cached. Model classes whose name
is no category of the dataset are dropped (a detector of 18 classes scored on faces only);
an annotated category that no model class names is refused: it could never be found, which
is almost always a mapping mistake.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.registry.ports import PROBABILITY_MAP, Detection, Input, Output
from pinbench.tasks.detection import boxes as geometry
from pinbench.tasks.detection.coco import (
    coco_mask_metrics,
    coco_metrics,
    to_coco,
    undefined_stats,
    validate_segmentations,
)
from pinbench.tasks.detection.decoding import check_columns, decoded
from pinbench.tasks.detection.errors import BadGroundTruth
from pinbench.tasks.detection.errors import DetectionSetupError as DetectionSetupError
from pinbench.tasks.detection.layouts import Detections
from pinbench.tasks.detection.masks import box_mask, encode, image_mask
from pinbench.tasks.detection.plausible import BoxCensus
from pinbench.tasks.detection.stats import MASK_STATS, STATS
from pinbench.tasks.detection.truth import GroundTruth, check_sizes
from pinbench.tasks.threshold import at_least

DETAIL_LIMIT = 100
"""Detections kept per image in the run's details (the metrics use up to NMS's limit)."""


def geometry_of(spec: Input) -> list[geometry.Step]:
    """The input's steps that move pixels, as ``detection.boxes`` steps."""
    out: list[geometry.Step] = []
    for step in spec.steps:
        if step.resize is not None:
            out.append(geometry.Resize(step.resize.size, step.resize.keep_aspect_ratio))
        elif step.max_dimension is not None:
            out.append(geometry.MaxDimension(step.max_dimension.size))
        elif step.resize_multiple is not None:
            out.append(geometry.ResizeMultiple(step.resize_multiple))
        elif step.crop is not None:
            out.append(geometry.Crop(step.crop.size))
        elif step.pad is not None:
            out.append(geometry.PadToSquare(step.pad.placement))
        elif step.letterbox is not None:
            out.append(geometry.Letterbox(step.letterbox.size, step.letterbox.placement))
        elif step.tokenize is not None:
            raise DetectionSetupError(
                what=f"input {spec.name!r}", reason="a detection input is an image, not text"
            )
        elif step.resize_height is not None:
            raise DetectionSetupError(
                what=f"input {spec.name!r}",
                reason="boxes and masks are not mapped back through resize_height (a text "
                "line's step): use resize, max_dimension, pad or letterbox",
            )
    return out


def image_input(inputs: Sequence[Input], model: str) -> Input:
    """The one input whose samples are images (a detection model has exactly one)."""
    if len(inputs) != 1:
        raise DetectionSetupError(
            what=f"model {model}",
            reason=f"a detection run needs exactly one input (the image), it declares "
            f"{len(inputs)}",
        )
    return inputs[0]


def detection_output(outputs: Sequence[Output], model: str) -> tuple[Output, Detection]:
    found = [o for o in outputs if o.type == "detection"]
    if len(found) != 1 or found[0].detection is None:
        declared = ", ".join(f"{o.name} ({o.type})" for o in outputs) or "none"
        raise DetectionSetupError(
            what=f"model {model}",
            reason="a detection run needs exactly one output of type detection with its "
            f"`detection` section; it declares {declared}",
        )
    return found[0], found[0].detection


@dataclass(frozen=True, slots=True)
class CategoryMap:
    names: list[str]
    """The model's class names, by class index (its labels file)."""
    ids: list[int | None]
    """The COCO category id of each model class, None where the dataset has none."""


def category_map(output: Output, model_files: dict[str, Path], truth: GroundTruth) -> CategoryMap:
    """The model's classes (its labels file, one name per line, or its ONNX metadata entry)
    matched to the dataset's COCO categories by name."""
    from pinbench.tasks.class_names import ClassNamesProblem, class_names

    assert output.labels is not None  # publish requires it of a detection output
    where = output.labels.path or f"ONNX metadata {output.labels.metadata!r}"
    try:
        names = class_names(output.labels, model_files, output=str(output.name))
    except ClassNamesProblem as exc:
        raise DetectionSetupError(what=f"output {output.name!r}", reason=exc.reason) from None
    ids = [truth.categories.get(name) for name in names]
    unnamed = sorted(
        name for name, cid in truth.categories.items() if cid in truth.annotated and cid not in ids
    )
    if unnamed:
        raise DetectionSetupError(
            what=f"output {output.name!r}",
            reason=f"the dataset's annotated categor{'y' if len(unnamed) == 1 else 'ies'} "
            f"{', '.join(repr(n) for n in unnamed[:5])} match no class name in {where} "
            f"(model classes: {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}): "
            "name the classes as the COCO categories are named",
        )
    return CategoryMap(list(names), ids)


def kept(found: Detections, detection: Detection, transform: geometry.Transform) -> Detections:
    """One sample's detections after normalized boxes (and a probability map's, fractions of
    the map) are scaled to input pixels, the score threshold and NMS (when declared; else best
    first)."""
    if detection.normalized or detection.layout == PROBABILITY_MAP:
        found = found.scaled(
            np.array([transform.input_width, transform.input_height] * 2, dtype=np.float64)
        )
    if detection.nms is not None:
        return found.suppressed(
            iou_threshold=detection.nms.iou,
            score_threshold=detection.score_threshold,
            max_detections=detection.nms.max_detections,
            class_agnostic=bool(detection.nms.class_agnostic),
        )
    above = np.flatnonzero(at_least(found.scores, detection.score_threshold, dtype=found.precision))
    order = above[np.argsort(-found.scores[above], kind="stable")]
    return found.take(order)


@dataclass(frozen=True, slots=True)
class Scored:
    metrics: dict[str, float]
    details: list[list[list[float]]]
    """Per image, its first detections as ``[category_id, score, x, y, w, h]`` (rounded)."""
    undefined: dict[str, str]
    """The COCO statistics left out as undefined, each with its reason."""


def score_detections(
    outputs: Sequence[Mapping[str, npt.NDArray[np.generic]]],
    plan: Plan,
    images: Sequence[tuple[str, Path]],
) -> Scored:
    """COCO metrics of every sample's detections (and masks, when the model gives them);
    ``outputs`` are the samples' outputs by name (``plan.names``), in sample order: one
    mapping of them all stacked, or one per sample where they differ in shape (images fed one
    at a time at sizes of their own); ``images`` each sample's (name, local file)."""
    from pinbench.worker.image_files import image_header

    detection, truth, cats = plan.detection, plan.truth, plan.cats
    sizes = [image_header(local, name=name)[:2] for name, local in images]
    check_sizes(truth, [name for name, _ in images], sizes)
    steps = geometry_of(plan.spec)
    transforms = [geometry.transform_of(w, h, steps) for w, h in sizes]
    inputs = [(t.input_width, t.input_height) for t in transforms]
    matched = np.array([cid is not None for cid in cats.ids], dtype=bool)
    category_ids = [cid if cid is not None else -1 for cid in cats.ids]
    results: list[dict[str, Any]] = []
    masks: list[dict[str, Any]] = []
    details: list[list[list[float]]] = []
    found_all: list[Detections] = []
    for part in outputs:  # each part's samples in order: the inputs' sizes are theirs
        ahead = inputs[len(found_all) :]
        check_columns(part, plan, ahead[0] if ahead else None)
        found_all += decoded(part, plan, ahead[: len(np.asarray(part[plan.name]))])
    census = BoxCensus()
    for (name, _), image_id, transform, found in zip(
        images, truth.image_ids, transforms, found_all, strict=True
    ):
        ours = kept(found, detection, transform)
        census.add(name, ours, transform)
        ours = ours.take(np.flatnonzero(matched[ours.classes]))
        coco = to_coco(image_id, ours, transform, category_ids)
        results += coco
        if ours.masks is not None:
            boxes = transform.to_original(ours.boxes, clip=False)
            masks += _mask_results(coco, ours.masks, boxes, transform, detection)
        details.append(
            [
                [float(r["category_id"]), round(r["score"], 4), *(round(v, 2) for v in r["bbox"])]
                for r in coco[:DETAIL_LIMIT]
            ]
        )
    census.check(output=plan.name, layout=detection.layout)
    metrics = coco_metrics(truth.coco, results)
    undefined = undefined_stats(metrics, STATS)
    if detection.masks is not None:
        mask_metrics = coco_mask_metrics(truth.coco, masks)
        metrics |= mask_metrics
        undefined |= undefined_stats(mask_metrics, MASK_STATS)
    return Scored(
        metrics
        | {"detections_count": float(len(results)), "accuracy_samples_count": float(len(images))},
        details,
        undefined,
    )


def _mask_results(
    coco: list[dict[str, Any]],
    scores: npt.NDArray[np.float32],
    boxes: geometry.BoxArray,
    transform: geometry.Transform,
    detection: Detection,
) -> list[dict[str, Any]]:
    """Each detection's mask on the original image as a COCO segm result (no bbox);
    ``boxes`` are the detections' unclipped ``xyxy`` on the original image."""
    threshold = 0.5 if detection.mask_threshold is None else detection.mask_threshold
    out = []
    for result, grid, box in zip(coco, scores, boxes, strict=True):
        if detection.mask_kind == "box":
            mask = box_mask(grid, box, transform, threshold)
        else:
            mask = image_mask(grid, transform, threshold)
        out.append(
            {
                "image_id": result["image_id"],
                "category_id": result["category_id"],
                "segmentation": encode(mask),
                "score": result["score"],
            }
        )
    return out


@dataclass(frozen=True, slots=True)
class Plan:
    """What scoring a detection run needs, checked before anything runs."""

    output: Output
    detection: Detection
    spec: Input
    truth: GroundTruth
    cats: CategoryMap
    anchors: npt.NDArray[np.float64] | None = None
    """An SSD's anchors (``heads.read_anchors``: centres and sizes), read before the run."""

    @property
    def name(self) -> str:
        return str(self.output.name)

    @property
    def names(self) -> list[str]:
        """Every output scoring reads: the detection output, then those its section names
        (each once)."""
        found = [self.name, *(str(n) for n in self.detection.extra_outputs)]
        return list(dict.fromkeys(found))


def plan(
    inputs: Sequence[Input],
    outputs: Sequence[Output],
    truth: GroundTruth,
    model_files: dict[str, Path],
    *,
    model: str,
) -> Plan:
    """The model's image input and detection output, and its classes matched to the
    dataset's categories (an error names what is missing or mismatched)."""
    spec = image_input(inputs, model)
    geometry_of(spec)  # a text input is refused before anything runs
    output, detection = detection_output(outputs, model)
    if detection.masks is not None:
        try:
            validate_segmentations(truth.coco)
        except BadGroundTruth as exc:
            raise DetectionSetupError(
                what=f"output {output.name!r} gives masks, so the dataset", reason=str(exc)
            ) from None
    anchors = None
    if detection.ssd is not None:
        from pinbench.tasks.detection.errors import BadDetectorOutput
        from pinbench.tasks.detection.heads import read_anchors

        where = detection.ssd.anchors
        try:
            anchors = read_anchors(model_files[where], detection.box_format, where=where)
        except BadDetectorOutput as exc:
            raise DetectionSetupError(what=f"output {output.name!r}", reason=str(exc)) from None
    cats = category_map(output, model_files, truth)
    return Plan(output, detection, spec, truth, cats, anchors)
