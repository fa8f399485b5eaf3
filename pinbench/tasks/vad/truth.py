"""Voice-activity ground truth, labels of format ``speech-segments``: a JSON-lines file of
one object per sample file, ``{"file": "a.wav", "speech": [[0.5, 1.25], [2.0, 3.1]]}``.

``file`` is the sample's path relative to the data folder; every sample file has one line.
``speech`` lists the spans of speech, each ``[start, end]`` in seconds from the file's start
(JSON numbers, ``0 <= start < end``), the span ``[start, end)``; ``[]`` for a file with no
speech. Spans may touch or overlap (speech is their union)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from pinbench.tasks.by_file import by_file
from pinbench.worker.lines import LabelProblem, json_lines, read_text

Span = tuple[float, float]
MAX_SPANS = 100_000
"""Speech spans of one file: a span every 10 ms of a 16-minute file."""


def read_segments(
    where: str, *, samples: list[str], folder: str, read: Callable[[str], Path]
) -> list[list[Span]]:
    """Each sample's speech spans, in sample order (``samples``: the sample files' artifact
    paths; ``read`` gives a verified local file by its artifact path)."""
    rows: list[tuple[int, str, object]] = []
    for number, row in json_lines(read_text(read(where), where), where):
        if not isinstance(row, dict) or set(row) != {"file", "speech"}:
            raise LabelProblem(
                path=where,
                reason=f'line {number}: want {{"file": "<path>", "speech": [[start, end], ...]}}',
            )
        if not isinstance(row["file"], str):
            raise LabelProblem(path=where, reason=f"line {number}: file is not a path")
        rows.append((number, row["file"], row["speech"]))
    what = 'line (a file without speech: "speech": [])'
    matched = by_file(rows, samples, folder, where, word="line", what=what)
    return [_spans(raw, where, number) for number, raw in matched]


def _spans(raw: object, where: str, number: int) -> list[Span]:
    if not isinstance(raw, list):
        raise LabelProblem(path=where, reason=f"line {number}: speech is not a list of spans")
    if len(raw) > MAX_SPANS:
        raise LabelProblem(
            path=where, reason=f"line {number}: {len(raw)} spans, more than {MAX_SPANS}"
        )
    spans = []
    for span in raw:
        if not (
            isinstance(span, list)
            and len(span) == 2
            and all(isinstance(t, int | float) and not isinstance(t, bool) for t in span)
        ):
            raise LabelProblem(
                path=where,
                reason=f"line {number}: span {span!r} is not [start, end] in seconds",
            )
        try:  # an integer past the floats (10**400) is no time either
            start, end = float(span[0]), float(span[1])
        except OverflowError:
            start = end = math.nan
        if not (math.isfinite(start) and math.isfinite(end) and 0 <= start < end):
            raise LabelProblem(
                path=where,
                reason=f"line {number}: span {span!r} is not 0 <= start < end (seconds)",
            )
        spans.append((start, end))
    return spans
