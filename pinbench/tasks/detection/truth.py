"""A detection dataset's ground truth: its COCO JSON file read, validated
(``coco.validate_ground_truth``) and matched to the dataset's sample files.

The JSON is read by ``artifacts.jsonsafe`` (nesting, duplicate keys and ``NaN`` refused).
Each COCO image's ``file_name`` is a path relative to the data folder; every sample file must
be one image of the JSON and every image of the JSON one sample file, so no image is silently
left out of (or added to) the metrics. Problems are ``LabelProblem`` naming the JSON file, as
for the other label formats, so publishing and the evaluator report them alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.artifacts.jsonsafe import JsonRefused, load_json
from pinbench.registry.dataset_layout import folder_prefix
from pinbench.tasks.detection.errors import BadGroundTruth
from pinbench.worker.labels import LabelProblem, read_label_text


@dataclass(frozen=True, slots=True)
class GroundTruth:
    coco: dict[str, Any]
    """The validated COCO ground truth (``iscrowd`` and ``area`` filled in)."""
    image_ids: list[int]
    """The COCO image id of each sample, in sample order."""
    sizes: list[tuple[int, int]]
    """Each sample's ``(width, height)`` as the JSON declares it."""
    categories: dict[str, int]
    """Category ids by name."""

    @property
    def annotated(self) -> set[int]:
        """The category ids that some annotation uses."""
        return {int(a["category_id"]) for a in self.coco["annotations"]}


def read_ground_truth(
    path: Path, *, where: str, samples: Sequence[str], folder: str
) -> GroundTruth:
    """The COCO JSON at ``path`` (``where`` in the dataset) for the sample files ``samples``
    (artifact paths under the data folder ``folder``)."""
    try:
        data = load_json(read_label_text(path, where))
    except JsonRefused as exc:
        raise LabelProblem(path=where, reason=f"not JSON pinbench accepts: {exc.reason}") from None
    if not isinstance(data, dict):
        raise LabelProblem(path=where, reason="COCO JSON must be an object")
    try:
        from pinbench.tasks.detection.coco import validate_ground_truth

        coco = validate_ground_truth(data)
    except BadGroundTruth as exc:
        raise LabelProblem(path=where, reason=str(exc)) from None
    return _matched(coco, where=where, samples=samples, folder=folder)


def _matched(
    coco: dict[str, Any], *, where: str, samples: Sequence[str], folder: str
) -> GroundTruth:
    prefix = folder_prefix(folder)
    by_file: dict[str, Mapping[str, Any]] = {}
    for image in coco["images"]:
        name = image.get("file_name")
        if not isinstance(name, str) or not name:
            raise LabelProblem(
                path=where, reason=f"image {image['id']}: file_name must be a non-empty string"
            )
        if prefix + name in by_file:
            raise LabelProblem(path=where, reason=f"file_name {name!r} names two images")
        by_file[prefix + name] = image
    missing = [s for s in samples if s not in by_file]
    if missing:
        raise LabelProblem(
            path=where,
            reason=f"sample file {missing[0]!r} is not an image of the COCO JSON "
            f"({len(missing)} sample file(s) missing; file_name is relative to the data "
            f"folder {folder!r})",
        )
    extra = sorted(set(by_file) - set(samples))
    if extra:
        raise LabelProblem(
            path=where,
            reason=f"COCO image {extra[0]!r} is not among the sample files ({len(extra)} "
            f"such image(s); file_name is relative to the data folder {folder!r})",
        )
    names: dict[str, int] = {}
    for category in coco["categories"]:
        name = category.get("name")
        if not isinstance(name, str) or not name:
            raise LabelProblem(
                path=where, reason=f"category {category['id']}: name must be a non-empty string"
            )
        if name in names:
            raise LabelProblem(path=where, reason=f"category name {name!r} appears twice")
        names[name] = int(category["id"])
    images = [by_file[s] for s in samples]
    return GroundTruth(
        coco,
        [int(i["id"]) for i in images],
        [(int(i["width"]), int(i["height"])) for i in images],
        names,
    )


def check_sizes(
    truth: GroundTruth, samples: Sequence[str], sizes: Sequence[tuple[int, int]]
) -> None:
    """Each sample file's real ``(width, height)`` must be the one its COCO image declares:
    boxes are mapped back onto the image through its size."""
    for sample, declared, real in zip(samples, truth.sizes, sizes, strict=True):
        if declared != real:
            raise LabelProblem(
                path=sample,
                reason=f"the image is {real[0]} x {real[1]} but the COCO JSON declares "
                f"{declared[0]} x {declared[1]}",
            )
