"""Scoring a segmentation run: the plan made before anything runs (the model's image input
and segmentation output, its class count against the dataset's, its class names), the first
answer's shape checked before the timed run, then every sample's output read into classes,
mapped back onto its original image and counted against its mask.

Runs after the scenario, outside any timed region. A sample's geometry is computed from its
image file's header and the input's steps; each mask is read, and checked again (its size and
values: the source of truth is re-derived), one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.registry.ports import Input, Output, Segmentation
from pinbench.tasks.detection import boxes as geometry
from pinbench.tasks.detection.score import geometry_of
from pinbench.tasks.segmentation.classes import class_count, class_maps, grid_of
from pinbench.tasks.segmentation.errors import SegmentationSetupError
from pinbench.tasks.segmentation.geometry import check_grid, to_original
from pinbench.tasks.segmentation.masks import check_mask, read_mask
from pinbench.tasks.segmentation.metrics import Confusion
from pinbench.tasks.segmentation.truth import MaskTruth
from pinbench.worker.labels import LabelProblem


@dataclass(frozen=True, slots=True)
class Plan:
    """What scoring a segmentation run needs, checked before anything runs."""

    output: Output
    section: Segmentation
    spec: Input
    steps: list[geometry.Step]
    truth: MaskTruth
    names: list[str] | None
    """Class names by index: the output's labels file, else the dataset's names file."""

    @property
    def name(self) -> str:
        return str(self.output.name)


def plan(
    inputs: Sequence[Input],
    outputs: Sequence[Output],
    truth: MaskTruth,
    model_files: Mapping[str, Path],
    *,
    model: str,
) -> Plan:
    """The model's one image input and one segmentation output, fit for the dataset's
    classes (an error names what is missing or mismatched)."""
    what = f"model {model}"
    if len(inputs) != 1 or any(s.tokenize is not None for s in inputs[0].steps):
        raise SegmentationSetupError(
            what=what,
            reason=f"a segmentation run needs exactly one input, an image; it declares "
            f"{len(inputs)}" + (" (text)" if len(inputs) == 1 else ""),
        )
    found = [o for o in outputs if o.type == "segmentation" and o.segmentation is not None]
    if len(found) != 1:
        declared = ", ".join(f"{o.name} ({o.type})" for o in outputs) or "none"
        raise SegmentationSetupError(
            what=what,
            reason="a segmentation run needs exactly one output of type segmentation with its "
            f"`segmentation` section; it declares {declared}",
        )
    output = found[0]
    assert output.segmentation is not None
    if output.segmentation.form == "probability" and truth.classes != 2:
        raise SegmentationSetupError(
            what=f"output {output.name!r}",
            reason=f"a probability map gives two classes (background 0, foreground 1) but the "
            f"dataset's masks index {truth.classes}: give logits or classes",
        )
    names = truth.names
    if output.labels is not None:
        names = _model_names(output, model_files, truth.classes)
    return Plan(output, output.segmentation, inputs[0], geometry_of(inputs[0]), truth, names)


def check_answer(answer: Mapping[str, npt.NDArray[np.generic]], plan: Plan) -> None:
    """A first answer fits: its shape is what the section says, and logits score as many
    classes as the dataset's masks index (before anything is timed)."""
    output = answer[plan.name]
    grid_of(output, plan.section, plan.name)
    scores = class_count(output, plan.section)
    if scores is not None and scores != plan.truth.classes:
        raise SegmentationSetupError(
            what=f"output {plan.name!r}",
            reason=f"its logits score {scores} classes (layout {plan.section.layout}, shape "
            f"{list(np.asarray(output).shape)}) but the dataset's masks index "
            f"{plan.truth.classes}: pair the model with a dataset labelled for it",
        )


def _model_names(output: Output, model_files: Mapping[str, Path], classes: int) -> list[str]:
    """The names the output's ``labels`` give (a file or the ONNX model's metadata), exactly
    one per class the masks index."""
    from pinbench.tasks.class_names import ClassNamesProblem, class_names

    assert output.labels is not None
    try:
        names = class_names(output.labels, model_files, output=str(output.name))
    except ClassNamesProblem as exc:
        raise SegmentationSetupError(what=f"output {output.name!r}", reason=str(exc)) from None
    if len(names) != classes:
        where = output.labels.path or f"ONNX metadata {output.labels.metadata!r}"
        raise SegmentationSetupError(
            what=f"output {output.name!r}",
            reason=f"{where}: names {len(names)} classes, the masks index {classes}",
        )
    return names


@dataclass(frozen=True, slots=True)
class Scored:
    metrics: dict[str, float]
    details: dict[str, Any]
    """Per-class IoU (None where undefined), the class names and the pixels counted."""


def score_masks(
    output: npt.NDArray[np.generic], plan: Plan, images: Sequence[tuple[str, Path]]
) -> Scored:
    """mIoU and pixel accuracy of every sample's class map against its mask; ``output`` is
    the segmentation output of all samples in order, ``images`` each sample's (name, local
    file)."""
    from pinbench.worker.image_files import image_header

    truth, section = plan.truth, plan.section
    check_answer({plan.name: output}, plan)
    shape = tuple(int(d) for d in np.asarray(output).shape)
    grid = grid_of(output, section, plan.name)
    confusion = Confusion(truth.classes, truth.ignore_index)
    for i, ((name, local), (mask_name, mask_local)) in enumerate(
        zip(images, truth.masks, strict=True)
    ):
        width, height = image_header(local, name=name)[:2]
        transform = geometry.transform_of(width, height, plan.steps)
        check_grid(
            grid, (transform.input_height, transform.input_width), output=plan.name, shape=shape
        )
        classes = class_maps(
            output[i : i + 1], section, plan.name, classes=truth.classes, samples=[name]
        )[0]
        try:
            mask = read_mask(mask_local, where=mask_name)
            check_mask(
                mask,
                where=mask_name,
                size=(width, height),
                classes=truth.classes,
                ignore_index=truth.ignore_index,
            )
        except LabelProblem as exc:
            raise SegmentationSetupError(what="the dataset", reason=str(exc)) from None
        confusion.add(mask, to_original(classes, transform))
    if confusion.counted == 0:
        raise SegmentationSetupError(
            what="the dataset",
            reason=f"every pixel of every mask is the ignore_index {truth.ignore_index}: "
            "there is nothing to score",
        )
    ious = confusion.ious()
    return Scored(
        confusion.metrics() | {"accuracy_samples_count": float(len(images))},
        {
            "classes": plan.names,
            "iou": [None if v is None else round(v, 6) for v in ious],
            "pixels_counted": confusion.counted,
        },
    )
