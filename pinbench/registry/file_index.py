"""A dataset's file index: the list of its files kept in a file of the artifact, pinned in the
manifest by that file's sha256, so that a dataset of any number of files has a manifest of a
few hundred bytes (decision 118).

The index is UTF-8 text, one line per file, each ended by LF (no CR anywhere)::

    <sha256, 64 lowercase hex> SP <size in bytes, decimal, no leading zero> SP <path> LF

``size`` is within the bound of a manifest's ``files[].size`` (``bounds.FILE_SIZE``); ``path``
is a file path inside the artifact as a manifest writes it (relative, normalised, no control
character), and the lines are in strictly increasing code-point order of their paths:
so no path is listed twice, and one set of files has exactly one index (its bytes, and so its
sha256, are a function of the files). ``parse_index`` refuses anything else naming the line;
``format_index`` writes it. Parsing is linear and reads nothing but the index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pinbench import bounds as b
from pinbench.errors import UserError
from pinbench.registry.manifest_parts import FileEntry, check_relative_path

MAX_FILES = 1_000_000
"""Files one index may list. Each listed file is a row in the registry and an entry in every
lockfile that pins the dataset (about 150 bytes): a million make a lockfile of ~150 MB."""
MAX_INDEX_BYTES = 256 * 1024 * 1024
"""An index is read whole: ``MAX_FILES`` lines of ~270 bytes (paths of ~180 characters)."""

_SHA256 = re.compile(rb"[0-9a-f]{64}")
_SIZE = re.compile(rb"0|[1-9][0-9]{0,19}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class FileIndexRefused(UserError):
    """An index that is not one: names the index file, the line (1-based, when one is at
    fault) and what is wrong."""

    def __init__(self, *, index: str, line: int | None, reason: str) -> None:
        where = f"{index!r} line {line}" if line is not None else repr(index)
        super().__init__(f"file index {where}: {reason}")
        self.index = index
        self.line = line
        self.reason = reason


def parse_index(data: bytes, *, index: str) -> list[FileEntry]:
    """The files an index lists, in its order (strictly increasing paths)."""

    def refuse(line: int | None, reason: str) -> FileIndexRefused:
        return FileIndexRefused(index=index, line=line, reason=reason)

    if len(data) > MAX_INDEX_BYTES:
        raise refuse(None, f"is {len(data)} bytes: at most {MAX_INDEX_BYTES}")
    if not data:
        raise refuse(None, "lists no file")
    if not data.endswith(b"\n"):
        raise refuse(data.count(b"\n") + 1, "the last line does not end with LF")
    if b"\r" in data:
        raise refuse(data[: data.index(b"\r")].count(b"\n") + 1, "holds a CR: lines end in LF")
    lines = data[:-1].split(b"\n")
    if len(lines) > MAX_FILES:
        raise refuse(None, f"lists {len(lines)} files: at most {MAX_FILES}")
    entries: list[FileEntry] = []
    previous = ""
    for number, line in enumerate(lines, start=1):
        digest, sep1, rest = line.partition(b" ")
        size, sep2, raw = rest.partition(b" ")
        if not (sep1 and sep2 and _SHA256.fullmatch(digest) and _SIZE.fullmatch(size)):
            raise refuse(
                number,
                "want '<sha256> <size> <path>' (64 lowercase hex digits, a decimal size "
                "without leading zeros, one space between)",
            )
        try:
            path = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise refuse(number, "the path is not UTF-8") from None
        if _CONTROL.search(path):
            raise refuse(number, f"the path {path[:80]!r} holds a control character")
        try:
            check_relative_path(path)
        except ValueError as exc:
            raise refuse(number, str(exc)) from None
        if path <= previous:
            if path == previous:
                raise refuse(number, f"{path!r} is listed twice")
            raise refuse(
                number, f"{path!r} comes after {previous!r}: paths are listed in sorted order"
            )
        previous = path
        if not b.FILE_SIZE.holds(int(size)):
            raise refuse(number, b.FILE_SIZE.refusal("the size", int(size)))
        entries.append(FileEntry(path=path, sha256=digest.decode(), size=int(size)))
    return entries


def format_index(entries: Iterable[tuple[str, str, int]]) -> bytes:
    """The index of ``(path, sha256, size)`` triples (any order; refused as ``parse_index``
    would refuse it)."""
    ordered = sorted(entries)
    text = "".join(f"{sha256} {size} {path}\n" for path, sha256, size in ordered)
    data = text.encode("utf-8")
    parse_index(data, index="(written)")
    return data
