"""A dataset manifest from a folder of sample files (or one ``.npy`` array) and its labels.

The sample format is read from the files (images, WAV audio, or ``.npy`` per sample); the
labels format from the labels file's suffix, or ``imagefolder`` when every sample sits in a
class folder and no labels file is given (audio clips too). The manifest is checked as
publishing would check it (layout, image signatures, every WAV file whole, labels against the
samples) before anything is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pinbench.authoring.authored import Authored, default_name
from pinbench.authoring.errors import AuthoringError
from pinbench.authoring.listing import file_entries
from pinbench.authoring.model import relative
from pinbench.registry.dataset_layout import ANY_FILE, SUFFIXES

LABEL_SUFFIXES = {
    ".tsv": "similarity-pairs",
    ".txt": "class-index-txt",
    ".csv": "class-index-csv",
    ".jsonl": "class-index-jsonl",
    ".npy": "class-index-npy",
    ".json": "coco-json",
}


class NotADataset(AuthoringError):
    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


BY_FOLDER = ("masks",)
"""The labels format given as a folder: one mask PNG per sample file, at its path."""

INDEX_FROM = 1000
"""A folder of more sample files than this gets a file index (decision 118): a manifest lists
a thousand files in ~120 KB, and its YAML is read whole, within 1 MiB."""


def dataset_manifest(
    data: Path,
    *,
    base: Path,
    name: str | None,
    version: str,
    labels: str | None,
    names: Path | None,
    index: Path | None = None,
    classes: int | None = None,
    ignore_index: int | None = None,
    label_format: str | None = None,
    data_format: str | None = None,
    images: dict[str, Any] | None = None,
) -> Authored:
    """The manifest of the samples at ``data`` (a folder, an ``.npy`` array, or a ``.txt``
    file of texts, one per line), labelled by ``labels`` (``imagefolder``, ``none``, a labels
    file, a folder of masks, or None to infer), with the class names in ``names`` and
    ``classes`` classes (for masks, ``masks.masks_classes`` when not given), ``ignore_index``
    the mask value no metric counts, ``label_format`` the labels file's format where its
    suffix's default is not it (``text-csv`` for a ``.csv`` of texts), ``data_format`` a
    folder's per-file format where the suffixes do not say it (``files``: every file a sample,
    of any kind, as read by processing code), ``images`` reference images' ``data_range`` and
    ``channel_axis`` (labels ``reference-image-npy``; each None when not given); file paths
    relative to
    ``base``; the task is the one that reads the labels format. A folder's sample files (and
    masks) are listed in a file index (``registry.file_index``) written at ``index``
    (default: beside the manifest, ``default_index``) when ``index`` is given or there are
    more than ``INDEX_FROM``; the manifest then names the index and lists only the labels and
    class-names files."""
    from pinbench.registry.dataset_manifest import DatasetManifest
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.manifest_parts import ManifestError

    notes: list[str] = []
    label_file = None if labels in (None, "imagefolder", "none") else Path(labels)
    masks = label_file is not None and label_file.is_dir()
    extras = [p for p in (label_file, names) if p is not None and not (masks and p == label_file)]
    for path in extras:
        if not path.is_file():
            raise NotADataset(path=str(path), reason="no such file")
    if label_file is not None and masks:
        from pinbench.authoring.masks import mask_files

        extras = [*mask_files(label_file), *extras]
    if data_format is not None and not data.is_dir():
        raise NotADataset(
            path=str(data), reason=f"--format {data_format} names a folder's format: give a folder"
        )
    if data.is_file():
        fmt = {".npy": "npy", ".txt": "text-lines", ".jsonl": "prompts-jsonl"}.get(
            data.suffix.lower()
        )
        if fmt is None:
            raise NotADataset(
                path=str(data),
                reason="give a folder of samples, an .npy array, a .txt file of texts or a "
                ".jsonl file of prompts or of questions",
            )
        if fmt == "prompts-jsonl" and _holds_questions(data):
            fmt = "questions-jsonl"
        files = [data]
    elif data.is_dir():
        skip = {p.resolve() for p in extras}
        skipped = {p.name for p in skip}
        files = sorted(
            (
                p
                for p in data.rglob("*")
                if p.is_file() and not (p.name in skipped and p.resolve() in skip)
            ),
            key=lambda p: p.parts,  # Path's own order, without its cost per comparison
        )
        if data_format == ANY_FILE:  # a hidden file (.DS_Store, .git/) is no sample
            hidden = [p for p in files if any(n.startswith(".") for n in p.relative_to(data).parts)]
            if hidden:
                notes.append(
                    f"left out {len(hidden)} hidden file(s) under {data} (first: "
                    f"{hidden[0].relative_to(data)}): a name starting with '.' is no sample"
                )
                files = [p for p in files if p not in set(hidden)]
        fmt = _sample_format(data, files) if data_format is None else data_format
    else:
        raise NotADataset(path=str(data), reason="no such file or folder")

    rel_data = relative(base, data) if data != base else "."
    if label_format is not None and (label_file is None or masks):
        raise NotADataset(
            path=str(labels),
            reason="--labels-format names the format of a labels file: give --labels FILE",
        )
    if fmt == "prompts-jsonl":  # the references are the prompts file's own `reference`s
        if label_file is not None or label_format is not None or names is not None:
            raise NotADataset(
                path=str(data),
                reason="a prompts file holds its references (each line's `reference`): give "
                "no --labels, --labels-format or --names",
            )
        label_format = "prompt-references"
    if fmt == "questions-jsonl":  # question answering: the answers are the labels file
        if label_file is None or masks or names is not None:
            raise NotADataset(
                path=str(data),
                reason="a questions file's answers are a labels file: give --labels "
                "answers.jsonl (one JSON array of the question's answer texts per line), no "
                "--names",
            )
        label_format = label_format or "squad-answers"
    label_format = label_format or _label_format(labels, label_file, data, files, fmt, notes)
    label_data: dict[str, Any] = {"format": label_format}
    if label_file is not None:
        label_data["path"] = relative(base, label_file)
    if names is not None:
        label_data["names"] = relative(base, names)
    if masks:
        from pinbench.authoring.masks import masks_classes

        assert label_file is not None
        classes = masks_classes(
            label_file,
            extras,
            classes=classes,
            names=names,
            ignore_index=ignore_index,
            notes=notes,
        )
    if classes is not None:
        label_data["classes"] = classes
    if ignore_index is not None:
        label_data["ignore_index"] = ignore_index
    label_data.update({k: v for k, v in (images or {}).items() if v is not None})
    manifest: dict[str, Any] = {
        "kind": "dataset",
        "name": name or default_name(data),
        "version": version,
        "data": {"format": fmt, "path": rel_data},
        "labels": label_data,
        "files": file_entries(base, [*files, *extras]),
    }
    if fmt in SUFFIXES:
        manifest["samples"] = sum(1 for p in files if p.suffix.lower() in SUFFIXES[fmt])
    elif fmt == ANY_FILE:
        manifest["samples"] = len(files)
    elif fmt == "text-lines":
        from pinbench.worker.datasets import read_text_lines
        from pinbench.worker.labels import LabelProblem

        try:
            manifest["samples"] = len(read_text_lines(data, where=str(data)))
        except LabelProblem as exc:
            raise NotADataset(path=exc.path, reason=exc.reason) from None
    elif fmt in ("prompts-jsonl", "questions-jsonl"):
        from pinbench.worker.labels import LabelProblem
        from pinbench.worker.prompts import read_prompts
        from pinbench.worker.questions import read_questions

        read = read_prompts if fmt == "prompts-jsonl" else read_questions
        try:
            manifest["samples"] = len(read(data, where=str(data)))
        except LabelProblem as exc:
            raise NotADataset(path=exc.path, reason=exc.reason) from None
    task = _task_of(label_format)
    if task is not None:
        manifest["task"] = task
    try:
        parsed = parse_manifest(manifest)
    except ManifestError as exc:
        raise NotADataset(path=str(data), reason=exc.reason) from None
    assert isinstance(parsed, DatasetManifest)
    _check_like_publish(parsed, base)
    if label_format == "imagefolder" and names is None:
        notes.append(
            "imagefolder classes are the folder names in sorted order (class 0 is the first); "
            "give --names with the model's class list if its indexes differ"
        )
    if data.is_dir() and (index is not None or len(files) > INDEX_FROM):
        return _indexed(manifest, notes, base, index or default_index(base, manifest["name"]))
    return Authored(manifest, notes)


def _holds_questions(path: Path) -> bool:
    """Whether a ``.jsonl`` file's first line is a question about a context (its keys
    ``question`` and ``context``: ``questions-jsonl``), not a prompt."""
    import json

    try:
        with path.open("rb") as f:
            first = f.readline(1 << 20)
        row = json.loads(first)
    except (OSError, ValueError):
        return False  # read as prompts, which names what is wrong with the line
    return isinstance(row, dict) and "question" in row and "context" in row


def default_index(base: Path, name: str) -> Path:
    """``NAME.files`` in the manifest's folder (the name's ``/`` as ``-``)."""
    return base / (name.replace("/", "-") + ".files")


def _indexed(manifest: dict[str, Any], notes: list[str], base: Path, index: Path) -> Authored:
    """``manifest`` with the files under its data folder moved to a file index at ``index``
    (inside ``base``, outside the data folder); checked as a manifest before anything is
    written."""
    from pinbench.registry.dataset_layout import folder_prefix
    from pinbench.registry.file_index import format_index
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.manifest_parts import ManifestError

    folders = [manifest["data"]["path"]]
    if manifest["labels"]["format"] in BY_FOLDER:  # a mask per sample: listed with it
        folders.append(manifest["labels"]["path"])
    prefixes = tuple(folder_prefix(f) for f in folders)
    listed = [f for f in manifest["files"] if f["path"].startswith(prefixes)]
    kept = [f for f in manifest["files"] if not f["path"].startswith(prefixes)]
    data = format_index((f["path"], f["sha256"], f["size"]) for f in listed)
    rel = relative(base, index)
    if any(f["path"] == rel for f in manifest["files"]):
        raise NotADataset(path=str(index), reason="the file index would replace a file it lists")
    compact = {
        **{k: v for k, v in manifest.items() if k != "files"},
        "files": kept,
        "file_index": {"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)},
    }
    try:
        parse_manifest(compact)
    except ManifestError as exc:
        raise NotADataset(path=str(index), reason=exc.reason) from None
    notes.append(
        f"{len(listed)} files are listed in the file index {rel} (a file of the dataset, "
        "pinned by its sha256): publish it with the manifest"
    )
    return Authored(compact, notes, {index: data})


def _task_of(label_format: str) -> str | None:
    """The task that reads ``label_format``, when it is not the manifest's default (then the
    manifest leaves ``task`` out, as it always did)."""
    import msgspec

    from pinbench.registry.dataset_manifest import DatasetManifest
    from pinbench.tasks.registry import task_of_label_format

    default = next(f.default for f in msgspec.structs.fields(DatasetManifest) if f.name == "task")
    owners = task_of_label_format(label_format)
    return owners[0] if owners and default not in owners else None


def _sample_format(folder: Path, files: Sequence[Path]) -> str:
    counts = {fmt: sum(1 for p in files if p.suffix.lower() in s) for fmt, s in SUFFIXES.items()}
    fmt = max(counts, key=lambda f: counts[f])
    if not counts[fmt]:
        wanted = ", ".join(s for suffixes in SUFFIXES.values() for s in suffixes)
        raise NotADataset(path=str(folder), reason=f"holds no sample files ({wanted})")
    return fmt


def _label_format(
    labels: str | None,
    label_file: Path | None,
    data: Path,
    files: Sequence[Path],
    fmt: str,
    notes: list[str],
) -> str:
    if label_file is not None and label_file.is_dir():
        return BY_FOLDER[0]
    if label_file is not None:
        found = LABEL_SUFFIXES.get(label_file.suffix.lower())
        if found is None:
            raise NotADataset(
                path=str(label_file),
                reason=f"labels files end in {', '.join(LABEL_SUFFIXES)} (a folder of masks "
                "is labels too)",
            )
        return found
    if labels == "imagefolder":
        return "imagefolder"
    in_folders = fmt in SUFFIXES and all(p.parent != data for p in files)
    if labels is None and in_folders:
        return "imagefolder"
    notes.append("no labels: the dataset allows performance runs only, not accuracy")
    return "class-index-npy"


def _check_like_publish(manifest: Any, base: Path) -> None:
    from pinbench.registry.sourcing import FileProblem
    from pinbench.tasks.dataset_files import check_dataset_files

    try:
        check_dataset_files(manifest, lambda entry: base / entry.path)
    except FileProblem as exc:
        raise NotADataset(path=exc.path, reason=exc.reason) from None
