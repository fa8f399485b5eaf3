"""Note-transcription ground truth, labels of format ``note-events``: a JSON-lines file of one
object per sample file, ``{"file": "a.wav", "notes": [[0.5, 1.25, 60], [1.0, 1.5, 64.5]]}``.

``file`` is the sample's path relative to the data folder; every sample file has one line.
``notes`` lists its notes, each ``[onset, offset, pitch]``: onset and offset in seconds from the
file's start (``0 <= onset < offset``), pitch a MIDI note number (69 is A4, 440 Hz; a fraction
is a pitch between semitones), ``0 <= pitch <= 127``; ``[]`` for a file with no note."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.tasks.by_file import by_file
from pinbench.worker.lines import LabelProblem, json_lines, read_text

MAX_NOTES = 100_000
"""Notes of one file: 50 a second for half an hour."""
Notes = npt.NDArray[np.float64]
"""A file's notes, ``(K, 3)``: onset and offset (seconds) and MIDI pitch per row."""


def note_problem(note: object) -> str | None:
    """Why ``note`` is not ``[onset, offset, pitch]`` as the module's docstring says, or None."""
    if not (
        isinstance(note, list | tuple)
        and len(note) == 3
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in note)
    ):
        return "is not [onset, offset, pitch]"
    try:  # an integer past the floats (10**400) is no number either
        onset, offset, pitch = (float(v) for v in note)
    except OverflowError:
        return "holds a number past the floats"
    if not all(math.isfinite(v) for v in (onset, offset, pitch)):
        return "holds a non-finite number"
    if not 0 <= onset < offset:
        return "is not 0 <= onset < offset (seconds; mir_eval refuses a note of no length)"
    if not 0 <= pitch <= 127:
        return "has a pitch outside MIDI's 0..127"
    return None


def read_notes(
    where: str, *, samples: list[str], folder: str, read: Callable[[str], Path]
) -> list[Notes]:
    """Each sample's notes, in sample order (``samples``: the sample files' artifact paths;
    ``read`` gives a verified local file by its artifact path)."""
    rows: list[tuple[int, str, object]] = []
    for number, row in json_lines(read_text(read(where), where), where):
        if not isinstance(row, dict) or set(row) != {"file", "notes"}:
            raise LabelProblem(
                path=where,
                reason=f'line {number}: want {{"file": "<path>", "notes": [[onset, offset, '
                "pitch], ...]}",
            )
        if not isinstance(row["file"], str):
            raise LabelProblem(path=where, reason=f"line {number}: file is not a path")
        rows.append((number, row["file"], row["notes"]))
    what = 'line (a file without notes: "notes": [])'
    matched = by_file(rows, samples, folder, where, word="line", what=what)
    return [_notes(raw, where, number) for number, raw in matched]


def _notes(raw: object, where: str, number: int) -> Notes:
    if not isinstance(raw, list):
        raise LabelProblem(path=where, reason=f"line {number}: notes is not a list of notes")
    if len(raw) > MAX_NOTES:
        raise LabelProblem(
            path=where, reason=f"line {number}: {len(raw)} notes, more than {MAX_NOTES}"
        )
    for note in raw:
        problem = note_problem(note)
        if problem is not None:
            raise LabelProblem(path=where, reason=f"line {number}: note {note!r:.80} {problem}")
    return np.array(raw, dtype=np.float64).reshape(len(raw), 3)
