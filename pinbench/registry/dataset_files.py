"""A dataset's files checked against its manifest when it is published, so that a dataset
that cannot be run is refused then, not at run time: each sample array's header, each image
file's header (format, size, mode: ``pipeline.image_header``), and the labels and class
names, which must give every sample one class. No sample pixel is decoded (a truncated image
is caught when the pipeline decodes it); a segmentation dataset's masks are, one at a time,
since their values are the labels."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pinbench.registry.dataset_layout import mask_paths, sample_paths
from pinbench.registry.manifest import DatasetManifest, FileEntry
from pinbench.registry.sourcing import FileProblem


def check_dataset_files(manifest: DatasetManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse ``manifest`` when its files do not make the dataset it declares; ``where`` gives
    the (already verified) bytes of each file. A dataset of plain files (no ``data``) imports
    no evaluator module: publishing one stays as quick as the copy."""
    data, labels = manifest.data, manifest.labels
    if data is None:
        if labels.names is not None:
            from pinbench.evaluator.labels import LabelProblem, parse_class_names, read_label_text

            entry = next(f for f in manifest.files if f.path == labels.names)
            try:
                text = read_label_text(where(entry), labels.names)
                parse_class_names(text, path=labels.names)
            except LabelProblem as exc:
                raise FileProblem(path=exc.path, reason=exc.reason) from None
        return
    from pinbench.evaluator.datasets import read_text_lines
    from pinbench.evaluator.labels import LabelProblem, read_labels
    from pinbench.evaluator.pipeline import ImageRefused, image_header
    from pinbench.tasks.detection.truth import check_sizes, read_ground_truth
    from pinbench.tasks.similarity.pairs import read_pairs

    entries = {f.path: f for f in manifest.files}

    def read(path: str) -> Path:
        return where(entries[path])

    sizes: list[tuple[int, int]] = []
    try:
        if data.format == "text-lines":
            listed, count = None, len(read_text_lines(read(data.path), where=data.path))
        elif data.format == "npy":
            listed, count = None, _npy_length(data.path, read(data.path))
        else:
            extra = {p for p in (labels.path, labels.names) if p is not None}
            listed = sample_paths(data.format, data.path, entries, extra=extra)
            count = len(listed)
            for path in listed:
                if data.format == "images":
                    sizes.append(image_header(read(path), name=path)[:2])
                else:
                    _npy_length(path, read(path))
        if manifest.samples is not None and manifest.samples != count:
            raise FileProblem(
                path=data.path,
                reason=f"holds {count} samples, the manifest declares {manifest.samples}",
            )
        if labels.format == "similarity-pairs":
            assert labels.path is not None
            read_pairs(read(labels.path), where=labels.path, count=count)
            return
        if labels.format == "coco-json":
            assert labels.path is not None and listed is not None  # the manifest checked
            truth = read_ground_truth(
                read(labels.path), where=labels.path, samples=listed, folder=data.path
            )
            if data.format != "images":
                raise FileProblem(path=data.path, reason="COCO ground truth needs image files")
            check_sizes(truth, listed, sizes)
            return
        if labels.format == "masks":
            assert listed is not None and data.format == "images"  # the manifest checked
            _check_masks(manifest, listed, sizes, read)
            return
        read_labels(
            labels,
            samples=listed,
            count=count,
            folder=data.path if listed is not None else None,
            read=read,
        )
    except LabelProblem as exc:
        raise FileProblem(path=exc.path, reason=exc.reason) from None
    except ImageRefused as exc:
        raise FileProblem(path=exc.name, reason=exc.problem) from None


def _check_masks(
    manifest: DatasetManifest,
    samples: list[str],
    sizes: list[tuple[int, int]],
    read: Callable[[str], Path],
) -> None:
    """Every sample's mask PNG decodes to one channel of the sample's size, each value a class
    index or the ignore_index (each decoded, one at a time); the names file names every class."""
    from pinbench.tasks.segmentation.masks import check_mask, read_mask
    from pinbench.tasks.segmentation.truth import class_names

    labels = manifest.labels
    assert labels.path is not None and labels.classes is not None and manifest.data is not None
    paths = [f.path for f in manifest.files]
    masks = mask_paths(samples, manifest.data.path, labels.path, paths)
    counted = False
    for size, mask in zip(sizes, masks, strict=True):
        values = read_mask(read(mask), where=mask)
        check_mask(
            values,
            where=mask,
            size=size,
            classes=labels.classes,
            ignore_index=labels.ignore_index,
        )
        counted = counted or bool((values != labels.ignore_index).any())
    if not counted:  # ignore_index is set: a mask has pixels and none is a class
        from pinbench.evaluator.labels import LabelProblem

        raise LabelProblem(
            path=labels.path,
            reason=f"every pixel of every mask is the ignore_index {labels.ignore_index}: with "
            "nothing to score, mIoU and pixel accuracy are undefined",
        )
    if labels.names is not None:
        class_names(read(labels.names), where=labels.names, classes=labels.classes)


def _npy_length(name: str, path: Path) -> int:
    from pinbench.artifacts.npy_header import npy_shape

    try:  # only the header is read
        shape = npy_shape(path)
    except (ValueError, OSError) as exc:
        raise FileProblem(path=name, reason=f"not a readable .npy array: {exc}") from None
    if not shape:
        raise FileProblem(path=name, reason="a sample array needs a first (sample) axis")
    return int(shape[0])
