"""The blob store's errors: a blob whose bytes, size or presence is not what was pinned, and a
filesystem that ran out of space while a blob was written (``out_of_space``)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from pinbench.artifacts.digest import Digest
from pinbench.errors import SystemFailure, UserError


class ChecksumMismatch(UserError):
    """Bytes do not match the digest they were declared or pinned with."""

    def __init__(self, *, path: str, expected: Digest, actual: Digest) -> None:
        super().__init__(
            f"checksum mismatch for {path}: expected sha256 {expected.hex}, got {actual.hex}"
        )
        self.path = path
        self.expected = expected
        self.actual = actual


class SizeMismatch(UserError):
    def __init__(self, *, path: str, expected: int, actual: int) -> None:
        super().__init__(f"size mismatch for {path}: expected {expected} bytes, got {actual}")
        self.path = path
        self.expected = expected
        self.actual = actual


class BlobMissing(UserError):
    def __init__(self, *, path: str, digest: Digest) -> None:
        super().__init__(f"blob for {path} (sha256 {digest.hex}) is missing from the store")
        self.path = path
        self.digest = digest


class StoreFull(SystemFailure):
    """The filesystem a blob was being written to ran out of space (or quota): nothing of
    that write is kept."""

    def __init__(self, *, folder: str, reason: str) -> None:
        super().__init__(
            f"the blob store is out of space: {reason} writing in {folder}; nothing was "
            "stored: free space on that filesystem and try again"
        )
        self.folder = folder
        self.reason = reason


FULL = (errno.ENOSPC, errno.EDQUOT)
"""The errors that say the filesystem is full (ENOSPC) or the user's quota is (EDQUOT)."""


@contextlib.contextmanager
def out_of_space(folder: Path) -> Iterator[None]:
    """Raise ``StoreFull`` for a write in ``folder`` that failed for want of space; every
    other ``OSError`` passes unchanged."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in FULL:
            raise
        raise StoreFull(folder=str(folder), reason=os.strerror(exc.errno)) from None
