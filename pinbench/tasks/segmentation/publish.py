"""A segmentation dataset's masks checked at publish: every mask decoded, one at a time."""

from __future__ import annotations

from pinbench.tasks.base import TruthSource
from pinbench.worker.lines import LabelProblem


def check_masks(source: TruthSource) -> None:
    """Every sample's mask PNG decodes to one channel of the sample's size, each value a class
    index or the ignore_index (each decoded, one at a time); the names file names every class."""
    from pinbench.registry.dataset_layout import mask_paths
    from pinbench.tasks.segmentation.masks import check_mask, read_mask
    from pinbench.tasks.segmentation.truth import class_names

    labels = source.dataset.labels
    data = source.dataset.data
    assert labels.path is not None and labels.classes is not None and data is not None
    assert source.listed is not None and source.sizes is not None  # images, the manifest checked
    masks = mask_paths(source.listed, data.path, labels.path, list(source.paths))
    counted = False
    for size, mask in zip(source.sizes, masks, strict=True):
        values = read_mask(source.paths[mask], where=mask)
        check_mask(
            values,
            where=mask,
            size=size,
            classes=labels.classes,
            ignore_index=labels.ignore_index,
        )
        counted = counted or bool((values != labels.ignore_index).any())
    if not counted:  # ignore_index is set: a mask has pixels and none is a class
        raise LabelProblem(
            path=labels.path,
            reason=f"every pixel of every mask is the ignore_index {labels.ignore_index}: with "
            "nothing to score, mIoU and pixel accuracy are undefined",
        )
    if labels.names is not None:
        class_names(source.paths[labels.names], where=labels.names, classes=labels.classes)
