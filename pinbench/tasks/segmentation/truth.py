"""A segmentation dataset's ground truth: each sample file's mask file (``dataset_layout``'s
``mask_paths``), the class count, the ignored value and the class names. The masks themselves
are read when a run is scored, one at a time (``masks.read_mask``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pinbench.registry.dataset_layout import LayoutError, mask_paths
from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.worker.labels import LabelProblem, parse_class_names, read_label_text


@dataclass(frozen=True, slots=True)
class MaskTruth:
    masks: list[tuple[str, Path]]
    """Each sample's mask: its path in the dataset and its verified bytes here, in sample
    order."""
    classes: int
    ignore_index: int | None
    names: list[str] | None
    """The dataset's class names (its names file), by class index."""


def mask_truth(
    labels: LabelFormat, *, samples: Sequence[str], folder: str, paths: Mapping[str, Path]
) -> MaskTruth:
    """The masks of ``samples`` (artifact paths under the data folder ``folder``) among the
    dataset's files ``paths``; problems are ``LabelProblem`` naming the masks folder or the
    names file."""
    assert labels.format == "masks" and labels.path is not None and labels.classes is not None
    try:
        found = mask_paths(list(samples), folder, labels.path, paths)
    except LayoutError as exc:
        raise LabelProblem(path=labels.path, reason=str(exc)) from None
    names = None
    if labels.names is not None:
        names = class_names(paths[labels.names], where=labels.names, classes=labels.classes)
    return MaskTruth([(m, paths[m]) for m in found], labels.classes, labels.ignore_index, names)


def class_names(path: Path, *, where: str, classes: int) -> list[str]:
    """A names file of exactly ``classes`` lines, one name per class index."""
    names = parse_class_names(read_label_text(path, where), path=where).names
    if len(names) != classes:
        raise LabelProblem(
            path=where, reason=f"names {len(names)} classes, the masks index {classes}"
        )
    return list(names)
