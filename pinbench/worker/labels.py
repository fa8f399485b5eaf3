"""A dataset's labels as class indexes, from each declared label format, and its class names.

Formats (``labels.format``):

- ``class-index-npy``: an ``.npy`` array, one integer class index per sample (never unpickled);
- ``class-index-txt``: one label per line, in sample order;
- ``class-index-csv``: a header row with the columns ``file`` and ``label`` (other columns are
  allowed and not read), one row per sample file, paths relative to the data folder;
- ``class-index-jsonl``: one ``{"file": ..., "label": ...}`` object per line, likewise;
- ``imagefolder``: a sample's label is the first folder below the data folder.

Which class a label names (decision 125): class names are strings, any strings, ``0`` and
``180`` included.

- ``imagefolder``: the folder is a class *name*, matched exactly against the names file; without
  one the classes are the folder names sorted in code-point order (as torchvision's
  ``ImageFolder``). A folder is never read as an index.
- ``class-index-npy``: the integers are class indexes (the names file, if any, only names them).
- txt, csv, jsonl: a label is text (a JSON integer is its decimal digits). Without a names file
  it is a class index, a non-negative integer (a model's class indexes are not guessable from
  a name). With one, the text is looked up among the names exactly; a label no name matches is
  a class index if it is one (digits, below the class count). A label that names one class and
  reads as the index of another (names ``1``, ``0``: the label ``0``) is refused as ambiguous.

The class-names file has one class per line, line ``i`` naming class ``i``. When every line
starts with a WordNet id (``n01440764 tench, Tinca tinca``, ImageNet's synsets file), the id is
the key and the rest its name; otherwise the whole line is both.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.registry.dataset_layout import imagefolder_class
from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.worker.lines import LabelProblem as LabelProblem
from pinbench.worker.lines import json_lines, read_text, split_lines

_SYNSET = re.compile(r"(n[0-9]{8})\s+(\S.*)")
_DIGITS = re.compile(r"-?[0-9]+")
MAX_INDEX = 2**31 - 1
"""No class index is larger (a label beyond it is refused, not overflowed)."""


@dataclass(frozen=True, slots=True)
class ClassNames:
    keys: list[str]
    names: list[str]
    """Display names, by class index."""
    by_key: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key.update((k, i) for i, k in enumerate(self.keys))

    def index(self, key: str) -> int | None:
        return self.by_key.get(key)


@dataclass(frozen=True, slots=True)
class Labels:
    indexes: npt.NDArray[np.int64]
    """One class index per sample, in sample order."""
    names: list[str] | None
    """Class names by index, where the dataset gives them."""


def parse_class_names(text: str, *, path: str) -> ClassNames:
    lines = _lines(text, path=path)
    if not lines:
        raise LabelProblem(path=path, reason="the class-names file is empty")
    synsets = [_SYNSET.fullmatch(line) for line in lines]
    if all(synsets):
        keys = [m.group(1) for m in synsets if m]
        names = [m.group(2).strip() for m in synsets if m]
    else:
        keys = names = [line.strip() for line in lines]
    seen: dict[str, int] = {}
    for i, key in enumerate(keys):
        if key in seen:
            raise LabelProblem(
                path=path, reason=f"class {key!r} is on lines {seen[key] + 1} and {i + 1}"
            )
        seen[key] = i
    return ClassNames(keys, names)


def read_labels(
    labels: LabelFormat,
    *,
    samples: list[str] | None,
    count: int,
    folder: str | None,
    read: Callable[[str], Path],
) -> Labels | None:
    """The dataset's labels for ``count`` samples (``samples``: the per-file sample paths in
    order, or None for an array dataset), or None when it has none; ``read`` gives the local
    (verified) file of an artifact path."""
    names = None
    if labels.names is not None:
        names = parse_class_names(
            read_label_text(read(labels.names), labels.names), path=labels.names
        )
        if labels.classes is not None and labels.classes != len(names.keys):
            raise LabelProblem(
                path=labels.names,
                reason=f"{len(names.keys)} class names but `classes` is {labels.classes}",
            )
    if labels.format == "imagefolder":
        assert samples is not None and folder is not None  # the manifest checked the layout
        raw: list[tuple[str, int | str]] = [
            (f"sample {p!r}", imagefolder_class(folder, p)) for p in samples
        ]
        source = f"the class folders of {folder}"
        if names is None:
            found = sorted({str(r) for _, r in raw})
            if labels.classes is not None and labels.classes != len(found):
                raise LabelProblem(
                    path=source,
                    reason=f"{len(found)} class folders but `classes` is {labels.classes}: "
                    "without a names file the classes are the folders, in sorted order; give "
                    "a names file (`labels.names`) listing every class",
                )
            names = ClassNames(found, found)
    elif labels.path is None:
        return None
    else:
        source = labels.path
        raw = _read_raw(labels, read(labels.path), samples=samples, count=count, folder=folder)
    limit = labels.classes
    if limit is None and names is not None:
        limit = len(names.keys)
    rule = _Rule(
        names=names,
        names_file=labels.names,
        source=source,
        limit=limit,
        by_name=labels.format == "imagefolder",
        by_index=labels.format == "class-index-npy",
    )
    indexes = np.array([rule.index(where, value) for where, value in raw], dtype=np.int64)
    if limit is not None and indexes.size and int(indexes.max()) >= limit:
        raise LabelProblem(
            path=source,
            reason=f"class index {int(indexes.max())} is out of range for {limit} classes",
        )
    return Labels(indexes, names.names if names is not None else None)


def _read_raw(
    labels: LabelFormat, path: Path, *, samples: list[str] | None, count: int, folder: str | None
) -> list[tuple[str, int | str]]:
    assert labels.path is not None
    where = labels.path
    if labels.format == "class-index-npy":
        return _from_npy(path, where, count)
    if labels.format == "class-index-txt":
        lines = _lines(read_label_text(path, where), path=where)
        if len(lines) != count:
            raise LabelProblem(
                path=where, reason=f"{len(lines)} label lines for {count} samples (one per sample)"
            )
        return [(f"line {i}", line.strip()) for i, line in enumerate(lines, start=1)]
    assert samples is not None and folder is not None  # csv/jsonl need per-file samples
    text = read_label_text(path, where)
    if labels.format == "class-index-csv":
        return _by_file(_csv_rows(text, where), samples, folder, where, "row")
    return _by_file(_jsonl_rows(text, where), samples, folder, where, "line")


def _from_npy(path: Path, where: str, count: int) -> list[tuple[str, int | str]]:
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise LabelProblem(path=where, reason=f"not a readable .npy array: {exc}") from None
    if not np.issubdtype(array.dtype, np.integer):
        raise LabelProblem(path=where, reason=f"class indexes must be integers, not {array.dtype}")
    if array.size and int(array.max()) > MAX_INDEX:
        raise LabelProblem(path=where, reason=f"class index {int(array.max())} is too large")
    if array.shape != (count,):
        raise LabelProblem(
            path=where, reason=f"shape {list(array.shape)} for {count} samples (want [{count}])"
        )
    return [(f"sample {i}", int(v)) for i, v in enumerate(array.tolist())]


def _csv_rows(text: str, where: str) -> list[tuple[int, str, str]]:
    """The rows of a CSV file whose records are the file's lines (``lines.split_lines``): a
    quoted field may span lines, a CR anywhere else is refused (Python's csv module would end
    a record there, where no other reader of the file does)."""
    reader = csv.reader(line + "\n" for line in split_lines(text, where))
    try:
        return _csv_rows_of(reader, where)
    except csv.Error as exc:
        reason = str(exc)
        if "new-line character seen in unquoted field" in reason:
            reason = "a carriage return inside an unquoted field (lines end at LF or CRLF)"
        line = reader.line_num
        raise LabelProblem(path=where, reason=f"line {line}: not CSV: {reason}") from None


def _csv_rows_of(reader: Iterator[list[str]], where: str) -> list[tuple[int, str, str]]:
    header = next(reader, None)
    if header is None or "file" not in header or "label" not in header:
        raise LabelProblem(path=where, reason="the first row must name the columns file and label")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise LabelProblem(
                path=where,
                reason=f"line 1: the header names column {name!r} more than once (which one "
                "holds the value is ambiguous)",
            )
        seen.add(name)
    f, lab = header.index("file"), header.index("label")
    out = []
    for number, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise LabelProblem(
                path=where, reason=f"row {number} has {len(row)} columns, the header {len(header)}"
            )
        out.append((number, row[f], row[lab].strip()))
    return out


def _jsonl_rows(text: str, where: str) -> list[tuple[int, str, str]]:
    out = []
    for number, row in json_lines(text, where):
        label = row.get("label") if isinstance(row, dict) else None
        if not (
            isinstance(row, dict)
            and isinstance(row.get("file"), str)
            and isinstance(label, int | str)
            and not isinstance(label, bool)
        ):
            raise LabelProblem(
                path=where,
                reason=f'line {number}: want {{"file": "<path>", "label": <index or class>}}',
            )
        out.append((number, row["file"], label if isinstance(label, str) else str(label)))
    return out


def _by_file(
    rows: list[tuple[int, str, str]], samples: list[str], folder: str, where: str, word: str
) -> list[tuple[str, int | str]]:
    """Each sample's label in sample order, with its place in the file (``word`` N: a csv
    ``row``, a jsonl ``line``)."""
    from pinbench.tasks.by_file import by_file

    matched = by_file(rows, samples, folder, where, word=word, what="label")
    return [(f"{word} {number}", label) for number, label in matched]


@dataclass(frozen=True, slots=True)
class _Rule:
    """Which class a label value names (decision 125; the module's docstring)."""

    names: ClassNames | None
    names_file: str | None
    source: str
    limit: int | None
    """The class count (``labels.classes``, else the names'), where known."""
    by_name: bool
    """imagefolder: a value is a class name, never an index."""
    by_index: bool
    """class-index-npy: a value is an index, never looked up among the names."""

    def index(self, where: str, value: int | str) -> int:
        text = value if isinstance(value, str) else str(value)
        if not text:
            raise LabelProblem(path=self.source, reason=f"{where}: the label is empty")
        named = None if self.names is None or self.by_index else self.names.index(text)
        if self.by_name:
            if named is None:
                raise self._unnamed(text)
            return named
        number = _number(value)
        if number is None:
            if named is not None:
                return named
            if self.names is None:
                raise LabelProblem(
                    path=self.source,
                    reason=f"{where}: label {text!r} is not a class index and the dataset has no "
                    "class-names file (`labels.names`) to look it up in",
                )
            raise self._unnamed(text)
        if self.names is None or self.by_index:
            if number < 0:
                raise LabelProblem(
                    path=self.source, reason=f"{where}: class index {text[:20]} is negative"
                )
            if number > MAX_INDEX:
                raise LabelProblem(
                    path=self.source, reason=f"{where}: class index {text[:20]} is too large"
                )
            return number  # read_labels checks it against `classes`
        if not 0 <= number < (self.limit or 0):
            if named is not None:
                return named
            raise LabelProblem(
                path=self.source,
                reason=f"{where}: label {text[:20]!r} is not a class name in {self.names_file} "
                f"and, as a class index, out of range for {self.limit} classes",
            )
        # A class index: refused when the same text (or the index's own digits, for ``07``)
        # names another class.
        claims = {c for c in (named, self.names.index(str(number))) if c not in (None, number)}
        if claims:
            raise self._ambiguous(where, text, min(claims), number)
        return number

    def _unnamed(self, text: str) -> LabelProblem:
        return LabelProblem(
            path=self.source,
            reason=f"class {text!r} is not in the class-names file {self.names_file}",
        )

    def _ambiguous(self, where: str, text: str, named: int, number: int) -> LabelProblem:
        assert self.names is not None
        return LabelProblem(
            path=self.source,
            reason=f"{where}: label {text!r} is ambiguous: {self.names_file} names class "
            f"{named} {self.names.keys[named]!r}, and as a class index it is class {number} "
            f"{self.names.keys[number]!r}; a number that is a class name must name its own "
            f"index (line {number + 1} of the names file) or be beyond the class count",
        )


def _number(value: int | str) -> int | None:
    """A label as an integer: an int as it is; text of decimal digits with an optional minus
    (of any length: past 18 significant digits it reads as MAX_INDEX + 1, refused as an index
    and never parsed in full); None otherwise."""
    if isinstance(value, int):
        return value
    if not _DIGITS.fullmatch(value):
        return None
    significant = value.lstrip("-").lstrip("0") or "0"
    magnitude = MAX_INDEX + 1 if len(significant) > 18 else int(significant)
    return -magnitude if value.startswith("-") else magnitude


def _lines(text: str, *, path: str) -> list[str]:
    lines = split_lines(text, path)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise LabelProblem(path=path, reason=f"line {number} is blank (one entry per line)")
    return lines


def read_label_text(path: Path, where: str) -> str:
    """A labels or names file's text (``lines.read_text``: UTF-8, at most 64 MiB, line ends
    untouched); split it with ``lines.split_lines``."""
    return read_text(path, where)
