"""A dataset's files checked against its manifest when it is published, so that a dataset
that cannot be run is refused then, not at run time: each sample array's header, each image
file's header (format, size, mode: ``pipeline.image_header``), each WAV file whole (header,
sizes, every frame present: ``audio.wav_info``, no sample kept), and the labels and class
names, which must give every sample one class. No sample pixel is decoded (a truncated image
is caught when the pipeline decodes it); a segmentation dataset's masks are, one at a time,
since their values are the labels."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from pinbench.registry.dataset_layout import ANY_FILE, sample_paths
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.sourcing import FileProblem


def check_dataset_files(manifest: DatasetManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse ``manifest`` when its files do not make the dataset it declares; ``where`` gives
    the (already verified) bytes of each file. A dataset of plain files (no ``data``) imports
    no evaluator module: publishing one stays as quick as the copy."""
    data, labels = manifest.data, manifest.labels
    if data is None:
        if labels.names is not None:
            from pinbench.worker.labels import LabelProblem, parse_class_names, read_label_text

            entry = next(f for f in manifest.files if f.path == labels.names)
            try:
                text = read_label_text(where(entry), labels.names)
                parse_class_names(text, path=labels.names)
            except LabelProblem as exc:
                raise FileProblem(path=exc.path, reason=exc.reason) from None
        return
    from pinbench.tasks.base import TruthSource
    from pinbench.tasks.registry import task
    from pinbench.worker.audio import AudioRefused, wav_info
    from pinbench.worker.datasets import read_text_lines
    from pinbench.worker.image_files import ImageRefused, image_header
    from pinbench.worker.labels import LabelProblem

    entries = {f.path: f for f in manifest.files}

    def read(path: str) -> Path:
        return where(entries[path])

    sizes: list[tuple[int, int]] = []
    try:
        if data.format == "text-lines":
            listed, count = None, len(read_text_lines(read(data.path), where=data.path))
        elif data.format == "prompts-jsonl":
            from pinbench.worker.prompts import read_prompts

            listed, count = None, len(read_prompts(read(data.path), where=data.path))
        elif data.format == "questions-jsonl":
            from pinbench.worker.questions import read_questions

            listed, count = None, len(read_questions(read(data.path), where=data.path))
        elif data.format == "npy":
            listed, count = None, _npy_length(data.path, read(data.path))
        else:
            extra = {p for p in (labels.path, labels.names) if p is not None}
            listed = sample_paths(data.format, data.path, entries, extra=extra)
            count = len(listed)
            for path in listed:
                if data.format == "images":
                    sizes.append(image_header(read(path), name=path)[:2])
                elif data.format == "audio":
                    wav_info(read(path), name=path)
                elif data.format == ANY_FILE:
                    pass  # any bytes are a sample: read_bytes pads, crops or refuses at a run
                else:
                    _npy_length(path, read(path))
        if manifest.samples is not None and manifest.samples != count:
            raise FileProblem(
                path=data.path,
                reason=f"holds {count} samples, the manifest declares {manifest.samples}",
            )
        source = TruthSource(
            manifest,
            f"{manifest.name}@{manifest.version}",
            listed,
            count,
            data.path if listed is not None else None,
            _Reader(read, entries),
            sizes if data.format == "images" else None,
        )
        task(manifest.task).check_truth(source)
    except LabelProblem as exc:
        raise FileProblem(
            path=exc.path, reason=exc.reason + _guess(manifest, exc.path, read)
        ) from None
    except (ImageRefused, AudioRefused) as exc:
        raise FileProblem(path=exc.name, reason=exc.problem) from None


def _guess(manifest: DatasetManifest, refused: str, read: Callable[[str], Path]) -> str:
    """The labels format the refused file (``refused``, its path), the dataset's labels file,
    looks like (``label_guess``), where it was read as class indices; else nothing."""
    from pinbench.tasks.label_guess import suggestion

    labels, data = manifest.labels, manifest.data
    if labels.path is None or labels.names is not None or data is None:
        return ""
    if refused != labels.path:
        return ""
    return suggestion(read(labels.path), declared=labels.format, data_format=data.format)


class _Reader(Mapping[str, Path]):
    """The dataset's verified files by path, each located only when asked for."""

    def __init__(self, read: Callable[[str], Path], entries: dict[str, FileEntry]) -> None:
        self._read = read
        self._entries = entries

    def __getitem__(self, path: str) -> Path:
        if path not in self._entries:
            raise KeyError(path)
        return self._read(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def _npy_length(name: str, path: Path) -> int:
    from pinbench.artifacts.npy_header import npy_shape

    try:  # only the header is read
        shape = npy_shape(path)
    except (ValueError, OSError) as exc:
        raise FileProblem(path=name, reason=f"not a readable .npy array: {exc}") from None
    if not shape:
        raise FileProblem(path=name, reason="a sample array needs a first (sample) axis")
    return int(shape[0])
