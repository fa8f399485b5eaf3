"""The labels format a file's content looks like, for a refusal of it as class indices: a
labels file's format is its suffix's default (``.txt``: ``class-index-txt``) unless the author
names another, and a file of trials or of transcripts read as class indices fails with a reason
(``36 label lines for 9 samples``, ``label 'a high tone' is not a class index``) that says
nothing of the format it is. The guess reads the file's first lines (at most ``HEAD_BYTES``),
never the whole of a large file, and is only ever a suggestion: the refusal stands.

- ``speaker-trials``: every line ``0|1 ENROLMENT TEST`` (VoxCeleb1's trial lists);
- ``transcript-*`` (audio samples) or ``text-*`` (any other): lines of text that are not all
  class indices (``.txt``), a ``file,text`` header (``.csv``), ``{"file", "text"}`` objects
  (``.jsonl``).
"""

from __future__ import annotations

import codecs
import csv
import json
import re
from pathlib import Path

HEAD_BYTES = 1 << 20
"""The most bytes of a labels file read to guess its format."""
HEAD_LINES = 1000
"""The most lines read to guess it."""
CLASS_INDEX = ("class-index-txt", "class-index-csv", "class-index-jsonl")
"""The formats a refusal is given a guess for: a labels file's suffix's default."""

_TRIAL = re.compile(r"[01] \S+ \S+")
_INDEX = re.compile(r"\s*-?\d+\s*")


def guess_label_format(path: Path, *, declared: str, data_format: str) -> str | None:
    """The labels format ``path`` looks like, where it is not ``declared`` (one of
    ``CLASS_INDEX``); None where the content suggests no other (or cannot be read)."""
    if declared not in CLASS_INDEX:
        return None
    lines = _head(path)
    if not lines:
        return None
    texts = "transcript" if data_format == "audio" else "text"
    guessed: str | None
    if declared == "class-index-txt":
        guessed = _txt(lines, texts)
    elif declared == "class-index-csv":
        guessed = _csv(lines, texts)
    else:
        guessed = _jsonl(lines, texts)
    return guessed if guessed != declared else None


def suggestion(path: Path, *, declared: str, data_format: str) -> str:
    """What a refusal of labels file ``path`` (read as ``declared``) adds: the format its
    content looks like and how to name it, or nothing."""
    guessed = guess_label_format(path, declared=declared, data_format=data_format)
    if guessed is None:
        return ""
    return (
        f"; its content looks like {guessed}, not {declared}: give --labels-format {guessed} "
        f"(in a manifest, labels.format: {guessed}; docs/tasks.md names each format)"
    )


def _head(path: Path) -> list[str]:
    """The first non-blank lines of ``path``'s text (UTF-8); none where it is no text."""
    try:
        with path.open("rb") as f:
            data = f.read(HEAD_BYTES)
        cut = len(data) == HEAD_BYTES
        # strict, but a character the read cut in two at its end is left out, not refused
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=not cut)
    except (OSError, UnicodeDecodeError):
        return []
    lines = [line.removesuffix("\r") for line in text.split("\n")[:HEAD_LINES]]
    if cut:
        lines = lines[:-1]  # the last may be cut
    return [line for line in lines if line.strip()]


def _txt(lines: list[str], texts: str) -> str:
    if all(_TRIAL.fullmatch(line) for line in lines):
        return "speaker-trials"
    if all(_INDEX.fullmatch(line) for line in lines):
        return "class-index-txt"
    return f"{texts}-txt"


def _csv(lines: list[str], texts: str) -> str | None:
    try:
        header = next(csv.reader(lines[:1]), [])
    except csv.Error:
        return None
    return f"{texts}-csv" if "file" in header and "text" in header else None


def _jsonl(lines: list[str], texts: str) -> str | None:
    try:
        row = json.loads(lines[0])
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
        return None
    keys = set(row) if isinstance(row, dict) else set()
    return f"{texts}-jsonl" if {"file", "text"} <= keys and "label" not in keys else None
