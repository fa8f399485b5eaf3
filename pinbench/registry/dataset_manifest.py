"""A dataset manifest: its samples (arrays or files), labels and their format, and the task
they serve."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from pinbench import bounds as b
from pinbench.registry.manifest_parts import (
    _IMAGE_DIGEST,
    FileEntry,
    Platform,
    _check_files,
    _Common,
    _Strict,
    check_relative_path,
)

LabelFormats = Annotated[str, msgspec.Meta(max_length=64, pattern="^[a-z][a-z0-9-]*$")]
"""A label format some task reads (``pinbench.tasks``: each task lists its own)."""


class LabelFormat(_Strict, frozen=True, kw_only=True):
    format: LabelFormats
    path: str | None = None
    classes: Annotated[int, b.CLASSES.meta] | None = None
    names: str | None = None
    """A class-names file among the files (added later: left out of the stored data while
    unset, see ``LATE_LABEL_FIELDS``)."""
    ignore_index: int | None = None
    """``masks``: the mask value of pixels no metric counts (e.g. 255, VOC's borders); a late
    field likewise."""
    data_range: Annotated[float, b.DATA_RANGE.meta] | None = None
    """``reference-image-npy``: the range of the images' values (1.0, 255), which PSNR and
    SSIM are computed against (``tasks.signals``); a late field likewise."""
    channel_axis: Literal[0, -1] | None = None
    """``reference-image-npy``: the axis of each image's channels (0: CHW, -1: HWC; left out:
    each image is (H, W)); a late field likewise."""

    def __post_init__(self) -> None:
        image = self.format == "reference-image-npy"
        for name in ("data_range", "channel_axis"):
            if getattr(self, name) is not None and not image:
                raise ValueError(
                    f"{name} says how reference images are read: it goes with labels of format "
                    "reference-image-npy"
                )
        if image and self.data_range is None:
            raise ValueError(
                "reference-image-npy labels need `data_range`: the range of the images' values "
                "(1.0 for images in 0..1, 255 for 8-bit ones), which PSNR and SSIM depend on"
            )
        if self.ignore_index is not None and self.format != "masks":
            raise ValueError("ignore_index is a mask value: it goes with labels of format masks")
        if self.format == "masks" and (self.path is None or self.classes is None):
            raise ValueError(
                "masks labels need `path` (the folder of one mask PNG per sample file) and "
                "`classes` (how many classes the mask values index)"
            )
        if self.format == "masks":
            assert self.path is not None and self.classes is not None
            if self.path != ".":
                check_relative_path(self.path)
            b.MASK_CLASSES.check("labels.classes", self.classes)
            no_class = b.between(self.classes, b.MASK_VALUE.high, "a mask value, no class index")
            no_class.check("labels.ignore_index", self.ignore_index)
        if self.format == "imagefolder" and self.path is not None:
            raise ValueError(
                "imagefolder labels are the folders the samples are in: give no `path` "
                "(a class-names file goes in `names`)"
            )


PER_FILE_FORMATS = ("images", "npy-files", "audio", "files")
"""Sample formats whose ``path`` is a folder of one file per sample."""


class SampleFiles(_Strict, frozen=True, kw_only=True):
    """Where the samples are: an ``.npy`` array ``(N, H, W[, C])`` among the files, or a
    folder of sample files (``images``: JPEG/PNG/WebP/BMP decoded by the input's ``decode``
    step; ``npy-files``: one ``.npy`` array per sample; ``text-lines``: a UTF-8 file, one
    text sample per line; ``prompts-jsonl``: a UTF-8 file of JSON lines, a prompt (and maybe
    its reference) each; ``questions-jsonl``: a UTF-8 file of JSON lines, a question and its
    context each (``pinbench.worker.questions``); ``audio``: PCM WAV files decoded by the
    input's ``decode_audio`` step; ``files``: files of any kind, each read as bytes by the
    input's ``read_bytes`` step)."""

    format: Literal[
        "npy",
        "images",
        "npy-files",
        "text-lines",
        "audio",
        "prompts-jsonl",
        "files",
        "questions-jsonl",
    ] = "npy"
    path: str

    def __post_init__(self) -> None:
        if self.format in PER_FILE_FORMATS and self.path != ".":
            check_relative_path(self.path)


class DatasetManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="dataset"):
    files: list[FileEntry]
    labels: LabelFormat
    data: SampleFiles | None = None
    task: Annotated[str, msgspec.Meta(max_length=64, pattern="^[a-z][a-z0-9-]*$")] = (
        "classification"
    )
    """What the samples mean: a task of ``pinbench.tasks.registry`` (classification,
    sentence-similarity, detection, segmentation, other, ...), which reads the labels."""
    samples: Annotated[int, b.SAMPLES.meta] | None = None
    file_index: FileEntry | None = None
    """A file of the artifact that lists its other files, one ``sha256 size path`` line each
    (``registry.file_index``), for a dataset of more files than a manifest lists (decision
    118). Its sha256 pins every file it lists: publishing reads it and stores, records and
    locks each listed file as one of ``files``. It lies outside the data (and masks) folder."""

    def __post_init__(self) -> None:
        self._check_identity()
        index = self.file_index
        _check_files(self.files, required=index is None)
        paths = {f.path for f in self.files} if index is None else None
        if paths is not None:
            self._check_named(paths)
        per_file = self.data is not None and self.data.format in PER_FILE_FORMATS
        self._check_task(per_file)
        if index is not None:
            self._check_index_entry(index)
        elif paths is not None:
            self._check_data(paths)

    def _check_task(self, per_file: bool) -> None:
        """The task is one pinbench knows, and reads labels of this format (each task checks
        its own labels section)."""
        from pinbench.registry.checks import checks

        checks().check_labels(self.task, self.labels, per_file=per_file)

    @property
    def files_list(self) -> list[FileEntry]:
        """The files the manifest itself lists: ``files`` and the file index (whose lines list
        the rest: ``listing``)."""
        return [*self.files, self.file_index] if self.file_index is not None else list(self.files)

    def check_listing(self, paths: set[str]) -> None:
        """What needs the path of every file (``files``, the index and what it lists): the
        labels and class-names files among them, the sample layout; ``ValueError`` if not."""
        self._check_named(paths)
        self._check_data(paths)

    def _check_index_entry(self, index: FileEntry) -> None:
        if index.sha256 is None or index.remote:
            raise ValueError(
                f"file_index {index.path!r} is a local file of the artifact with its sha256 "
                "(it is read when publishing, before any other file)"
            )
        if any(f.path == index.path for f in self.files):
            raise ValueError(f"file_index {index.path!r} is also listed in files")
        from pinbench.registry.dataset_layout import folder_prefix

        folders = []
        if self.data is not None and self.data.format in PER_FILE_FORMATS:
            folders.append(("data", self.data.path))
        if self.labels.format == "masks" and self.labels.path is not None:
            folders.append(("masks", self.labels.path))
        for what, folder in folders:
            if index.path.startswith(folder_prefix(folder)):
                raise ValueError(
                    f"file_index {index.path!r} is inside the {what} folder {folder!r}, where "
                    "every file is a sample: keep it beside the folder"
                )

    def _check_named(self, paths: set[str]) -> None:
        masks = self.labels.format == "masks"
        label_file = None if masks else self.labels.path
        for what, path in (("labels", label_file), ("class-names", self.labels.names)):
            if path is not None and path not in paths:
                raise ValueError(f"{what} file {path!r} is not among the files")

    def _check_data(self, paths: set[str]) -> None:
        if self.data is None:
            return
        if self.data.format not in PER_FILE_FORMATS:
            if self.data.path not in paths:
                raise ValueError(f"data file {self.data.path!r} is not among the files")
            return
        from pinbench.registry.dataset_layout import (
            LayoutError,
            imagefolder_class,
            mask_paths,
            sample_paths,
        )

        masks = self.labels.format == "masks"
        if masks and self.data.format != "images":
            raise ValueError("masks labels go with image samples (data.format images)")
        extra = {p for p in (self.labels.path, self.labels.names) if p is not None}
        try:
            found = sample_paths(self.data.format, self.data.path, paths, extra=extra)
            if self.labels.format == "imagefolder":
                for path in found:
                    imagefolder_class(self.data.path, path)
            if masks:
                assert self.labels.path is not None  # LabelFormat checked
                mask_paths(found, self.data.path, self.labels.path, paths)
        except LayoutError as exc:
            raise ValueError(str(exc)) from None
        if self.samples is not None and self.samples != len(found):
            raise ValueError(
                f"samples is {self.samples} but the data folder {self.data.path!r} holds "
                f"{len(found)} sample files"
            )


class ImageManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="image"):
    digest: str
    """The image's content digest ``sha256:...`` (the manifest or index digest)."""
    reference: str | None = None
    """Where it can be pulled from, e.g. ``127.0.0.1:5000/pinbench/onnxruntime``."""
    platform: Platform = msgspec.field(default_factory=Platform)

    def __post_init__(self) -> None:
        self._check_identity()
        if not _IMAGE_DIGEST.fullmatch(self.digest):
            raise ValueError("digest must be 'sha256:' followed by 64 lowercase hex digits")
