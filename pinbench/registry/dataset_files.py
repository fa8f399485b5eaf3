"""A dataset's files checked against its manifest when it is published, so that a dataset
that cannot be run is refused then, not at run time: the sample array's header, each image
file's signature (its first bytes), and the labels and class names, which must give every
sample one class. Nothing is decoded but the small label files; a truncated image is caught
when the pipeline decodes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pinbench.registry.dataset_layout import sample_paths
from pinbench.registry.manifest import DatasetManifest, FileEntry
from pinbench.registry.sourcing import FileProblem

_SIGNATURES = {
    "JPEG": (b"\xff\xd8\xff",),
    "PNG": (b"\x89PNG\r\n\x1a\n",),
    "BMP": (b"BM",),
}


def check_dataset_files(manifest: DatasetManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse ``manifest`` when its files do not make the dataset it declares; ``where`` gives
    the (already verified) bytes of each file."""
    from pinbench.evaluator.labels import LabelProblem, parse_class_names, read_labels

    entries = {f.path: f for f in manifest.files}

    def read(path: str) -> Path:
        return where(entries[path])

    data, labels = manifest.data, manifest.labels
    try:
        if data is None:
            if labels.names is not None:
                text = read(labels.names).read_text(encoding="utf-8-sig")
                parse_class_names(text, path=labels.names)
            return
        if data.format == "npy":
            listed, count = None, _npy_length(data.path, read(data.path))
        else:
            extra = {p for p in (labels.path, labels.names) if p is not None}
            listed = sample_paths(data.format, data.path, entries, extra=extra)
            count = len(listed)
            if data.format == "images":
                for path in listed:
                    _check_image(path, read(path))
        if manifest.samples is not None and manifest.samples != count:
            raise FileProblem(
                path=data.path,
                reason=f"holds {count} samples, the manifest declares {manifest.samples}",
            )
        read_labels(
            labels,
            samples=listed,
            count=count,
            folder=data.path if listed is not None else None,
            read=read,
        )
    except LabelProblem as exc:
        raise FileProblem(path=exc.path, reason=exc.reason) from None
    except UnicodeDecodeError as exc:
        raise FileProblem(path=str(labels.names), reason=f"not UTF-8 text: {exc}") from None


def _npy_length(name: str, path: Path) -> int:
    import numpy as np

    try:  # memory-mapped: only the header is read
        shape = np.load(path, mmap_mode="r", allow_pickle=False).shape
    except (ValueError, OSError) as exc:
        raise FileProblem(path=name, reason=f"not a readable .npy array: {exc}") from None
    if not shape:
        raise FileProblem(path=name, reason="a sample array needs a first (sample) axis")
    return int(shape[0])


def _check_image(name: str, path: Path) -> None:
    with path.open("rb") as f:
        head = f.read(12)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return
    if any(head.startswith(s) for sigs in _SIGNATURES.values() for s in sigs):
        return
    raise FileProblem(
        path=name,
        reason="not a JPEG, PNG, WebP or BMP image (its first bytes say otherwise)",
    )
