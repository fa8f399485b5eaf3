"""The one reader of line-based files: text samples, labels, class names, sentence pairs,
JSON lines and CSV rows all split here, so a sample boundary is the same everywhere
(decision 114).

A file is UTF-8 (a leading byte-order mark dropped), read as bytes, never through Python's
universal newlines: lines end at LF only, and a CR just before an LF belongs to the line end
(a CRLF file reads as its LF twin). Every other character, a lone CR, a form feed, U+2028,
U+0085, stays inside its line. A file holds at most ``MAX_FILE_BYTES`` and one line at most
``MAX_LINE_BYTES``: a longer line is refused naming the file and the line, since each line may
become one sample held, and tokenized, whole.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 64 * 1024 * 1024
"""A line-based (or labels) file is read whole: at most this many bytes (64 MiB holds a label
line for millions of samples)."""
MAX_LINE_BYTES = 1024 * 1024
"""The longest line, in UTF-8 bytes without its line end (1 MiB: some 250,000 tokens, four
times the longest ``max_length`` a tokenize step may declare)."""
_BOM = "\ufeff"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class LabelProblem(ValueError):
    """A dataset's (or a model's) samples, labels, class-names or pairs file that does not
    read as its format says: names the file (``path``) and what is wrong (``reason``)."""

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[object, ...]:
        return _rebuild, (self.path, self.reason)


def _rebuild(path: str, reason: str) -> LabelProblem:
    return LabelProblem(path=path, reason=reason)


def read_text(path: Path, where: str) -> str:
    """A file's whole text: UTF-8 (a leading BOM dropped), at most ``MAX_FILE_BYTES``, its
    line ends untouched; ``where`` names it in errors (its path in the artifact)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise LabelProblem(
                path=where,
                reason=f"{size} bytes: a samples, labels or names file holds at most "
                f"{MAX_FILE_BYTES} bytes",
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise LabelProblem(path=where, reason=f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise LabelProblem(
            path=where, reason=f"line {line} is not UTF-8 (byte {exc.start}: {exc.reason})"
        ) from None
    return text.removeprefix(_BOM)


def split_lines(text: str, where: str) -> list[str]:
    """``text``'s lines: split on LF only, a CR before each LF dropped, blank lines at the end
    dropped (a final line end, or a few, is not a sample); a line longer than
    ``MAX_LINE_BYTES`` is refused naming it."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    for number, line in enumerate(lines, start=1):
        if len(line) * 4 > MAX_LINE_BYTES and (size := len(line.encode())) > MAX_LINE_BYTES:
            raise LabelProblem(
                path=where,
                reason=f"line {number} is {size} bytes, more than the {MAX_LINE_BYTES} a line "
                "may hold",
            )
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def read_lines(path: Path, where: str) -> list[str]:
    """A line-based file's lines (``read_text``, then ``split_lines``)."""
    return split_lines(read_text(path, where), where)


def json_lines(text: str, where: str) -> list[tuple[int, object]]:
    """A JSON-lines file's values with their line numbers (``split_lines``; blank lines
    skipped); a line that is not JSON, an object giving a key twice (``json`` keeps the last,
    other readers the first), or a string holding half of a surrogate pair (``"\\ud800"``: no
    character, and no UTF-8 can hold it) is refused naming the line."""
    import json

    out: list[tuple[int, object]] = []
    for number, line in enumerate(split_lines(text, where), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, object_pairs_hook=_unique_keys)
            if _SURROGATE_ESCAPE.search(line):  # only a \u escape makes one
                json.dumps(value, ensure_ascii=False).encode("utf-8")
            out.append((number, value))
        except UnicodeEncodeError:
            raise LabelProblem(
                path=where,
                reason=f"line {number}: a \\u escape is half of a surrogate pair, not a character",
            ) from None
        except _DuplicateKey as exc:
            raise LabelProblem(
                path=where,
                reason=f"line {number}: key {exc.key!r} appears more than once in one object "
                "(which one holds the value is ambiguous)",
            ) from None
        except (ValueError, RecursionError) as exc:
            raise LabelProblem(path=where, reason=f"line {number} is not JSON: {exc}") from None
    return out


def json_objects(
    lines: list[str], where: str, *, keys: tuple[str, ...], hint: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    """The JSON objects of a file of one object per line (``prompts-jsonl``,
    ``questions-jsonl``), each with its place ("line N"): read with ``jsonsafe`` (a key given
    twice refused, nesting at most 2 deep); a blank line, a line that is not an object, or a
    key not in ``keys`` (never ignored; ``hint`` said after the keys) refused naming the line."""
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    out: list[tuple[str, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        at = f"line {number}"
        if not line.strip():
            raise LabelProblem(path=where, reason=f"{at} is blank (one JSON object per line)")
        try:
            row = load_json(line, max_depth=2)
        except JsonRefused as exc:
            raise LabelProblem(path=where, reason=f"{at}: {exc}") from None
        if not isinstance(row, dict):
            raise LabelProblem(path=where, reason=f"{at}: not a JSON object")
        unknown = sorted(set(row) - set(keys))
        if unknown:
            raise LabelProblem(
                path=where,
                reason=f"{at}: unknown key {unknown[0][:64]!r} (keys: {', '.join(keys)}{hint})",
            )
        out.append((at, row))
    return out


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        keys = [k for k, _ in pairs]
        raise _DuplicateKey(next(k for k in keys if keys.count(k) > 1))
    return out
