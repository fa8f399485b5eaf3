"""Each sample's reference text, from the label formats the package's docstring describes."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.tasks.by_file import by_file
from pinbench.tasks.text_recognition import MAX_TEXT_CHARS
from pinbench.worker.lines import LabelProblem, json_lines, read_text, split_lines

Row = tuple[int, str, str]
"""A labels row: its line number, the sample file it names, the text."""


def read_texts(
    labels: LabelFormat,
    *,
    samples: list[str] | None,
    count: int,
    folder: str | None,
    read: Callable[[str], Path],
) -> list[str]:
    """One reference text per sample, in sample order (``samples``: a per-file dataset's sample
    paths; ``read`` gives the verified local file of an artifact path)."""
    where = labels.path
    assert where is not None  # Task.check_labels
    text = read_text(read(where), where)
    if labels.format.endswith("-txt"):  # text-txt, and speech-recognition's transcript-txt
        texts = split_lines(text, where)
        for number, line in enumerate(texts, start=1):
            if not line.strip():
                raise LabelProblem(
                    path=where,
                    reason=f"line {number} is blank: a text-txt line is one sample's text (a "
                    "sample with no text needs text-csv or text-jsonl)",
                )
        if len(texts) != count:
            raise LabelProblem(
                path=where, reason=f"{len(texts)} text lines for {count} samples (one per sample)"
            )
    else:
        assert samples is not None and folder is not None  # by_file_name: a folder of files
        csv_rows = labels.format.endswith("-csv")
        rows = _csv_rows(text, where) if csv_rows else _jsonl_rows(text, where)
        texts = _by_file(rows, samples, folder, where)
    for i, found in enumerate(texts):
        if len(found) > MAX_TEXT_CHARS:
            raise LabelProblem(
                path=where,
                reason=f"the text of sample {i} has {len(found)} characters, more than the "
                f"{MAX_TEXT_CHARS} a reference may hold",
            )
    return texts


def _csv_rows(text: str, where: str) -> list[Row]:
    """Rows of records that are the file's lines (``lines.split_lines``; a quoted field may
    span lines)."""
    reader = csv.reader(line + "\n" for line in split_lines(text, where))
    try:
        header = next(reader, None)
        if header is None or "file" not in header or "text" not in header:
            raise LabelProblem(
                path=where, reason="the first row must name the columns file and text"
            )
        if len(set(header)) != len(header):
            twice = next(name for name in header if header.count(name) > 1)
            raise LabelProblem(
                path=where, reason=f"line 1: the header names column {twice!r} more than once"
            )
        f, t = header.index("file"), header.index("text")
        rows = []
        for row in reader:
            number = reader.line_num
            if not row:
                continue
            if len(row) != len(header):
                raise LabelProblem(
                    path=where,
                    reason=f"line {number} has {len(row)} columns, the header {len(header)}",
                )
            rows.append((number, row[f], row[t]))
        return rows
    except csv.Error as exc:
        raise LabelProblem(path=where, reason=f"line {reader.line_num}: not CSV: {exc}") from None


def _jsonl_rows(text: str, where: str) -> list[Row]:
    rows = []
    for number, row in json_lines(text, where):
        if not (
            isinstance(row, dict)
            and isinstance(row.get("file"), str)
            and isinstance(row.get("text"), str)
        ):
            raise LabelProblem(
                path=where, reason=f'line {number}: want {{"file": "<path>", "text": "<text>"}}'
            )
        rows.append((number, row["file"], row["text"]))
    return rows


def _by_file(rows: list[Row], samples: list[str], folder: str, where: str) -> list[str]:
    return [text for _, text in by_file(rows, samples, folder, where, word="line", what="text")]
