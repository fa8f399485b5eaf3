"""Manifest file entries (path relative to the manifest's folder, sha256, size) for any number
of files: a folder resolved once for all the files in it, a small file read and hashed in one
call. What ``relative`` refuses is refused the same (a file outside the folder, or a link to
one); a dataset of 100,000 files is listed in seconds."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pinbench.artifacts.digest import hash_file
from pinbench.authoring.errors import OutsideFolder

SMALL = 1 << 20
"""Files up to this size are read whole and hashed at once."""


class Relative:
    """``path`` relative to ``base`` as a POSIX path, or ``OutsideFolder``; folders resolved
    once each, paths handled as strings (``pathlib`` costs more than the check)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._absolute = os.path.abspath(base)
        self._real = os.path.realpath(base)
        self._folders: dict[str, str] = {}

    def __call__(self, path: Path) -> str:
        absolute = os.path.abspath(path)
        rel = os.path.relpath(absolute, self._absolute)
        if rel == ".." or rel.startswith("../"):
            raise OutsideFolder(path=str(path), folder=str(self.base))
        real = self._resolved(absolute)
        if not (real == self._real or real.startswith(self._real.rstrip("/") + "/")):
            raise OutsideFolder(path=str(path), folder=str(self.base), symlink=True)
        return rel

    def _resolved(self, absolute: str) -> str:
        """``os.path.realpath``, the parent folder's taken from the cache."""
        if os.path.islink(absolute):
            return os.path.realpath(absolute)
        parent, name = os.path.split(absolute)
        real = self._folders.get(parent)
        if real is None:
            real = self._folders[parent] = os.path.realpath(parent)
        return os.path.join(real, name)


def file_hash(path: Path) -> tuple[str, int]:
    """sha256 (hex) and size of a file's bytes."""
    with path.open("rb") as handle:
        data = handle.read(SMALL + 1)
    if len(data) <= SMALL:
        return hashlib.sha256(data).hexdigest(), len(data)
    digest, size = hash_file(path)
    return digest.hex, size


def file_entries(base: Path, files: Sequence[Path]) -> list[dict[str, Any]]:
    """One entry per file (the first of any listed twice), paths relative to ``base``."""
    relative = Relative(base)
    entries: dict[str, dict[str, Any]] = {}
    for path in files:
        rel = relative(path)
        if rel in entries:
            continue
        sha256, size = file_hash(path)
        entries[rel] = {"path": rel, "sha256": sha256, "size": size}
    return list(entries.values())
