"""A file in the blob store's temp area that bytes are written into as they arrive, hashed
(sha256, and md5 for legacy digests) on the way; it can take up where an earlier write stopped."""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path
from typing import Any

from pinbench.artifacts.digest import CHUNK_SIZE, Digest, Progress
from pinbench.artifacts.store import StagedBlob


class SinkBusy(Exception):
    """Another process holds this sink's file."""


class Sink:
    """Open ``path`` for writing (and lock it); with ``resume``, keep the bytes already there
    and hash them first, so the digests cover the whole file."""

    def __init__(self, path: Path, *, resume: bool = False, progress: Progress | None = None):
        self.path = path
        self.progress = progress
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._file = os.fdopen(fd, "r+b", buffering=0)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            raise SinkBusy(str(path)) from None
        self._reset()
        if resume:
            self._rehash()
        else:
            self._file.truncate(0)

    def _reset(self) -> None:
        self._sha = hashlib.sha256()
        self._md5: Any = hashlib.md5(usedforsecurity=False)
        self.size = 0

    def _rehash(self) -> None:
        self._file.seek(0)
        while chunk := self._file.read(CHUNK_SIZE):
            self._sha.update(chunk)
            self._md5.update(chunk)
            self.size += len(chunk)
        if self.progress is not None and self.size:
            self.progress(self.size)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) or 0 :]
        self._sha.update(data)
        self._md5.update(data)
        self.size += len(data)
        if self.progress is not None:
            self.progress(len(data))

    def restart(self) -> None:
        """Drop what was written (the source could not continue from it)."""
        self._file.seek(0)
        self._file.truncate(0)
        self._reset()

    @property
    def md5(self) -> str:
        return str(self._md5.hexdigest())

    def finish(self) -> StagedBlob:
        """Flush to disk and close; the file becomes a staged blob (not yet visible)."""
        os.fsync(self._file.fileno())
        self._file.close()
        return StagedBlob(self.path, Digest(self._sha.hexdigest()), self.size)

    def close(self) -> None:
        """Stop writing and keep what is there (for a later resume)."""
        self._file.close()

    def abort(self) -> None:
        self._file.close()
        self.path.unlink(missing_ok=True)
