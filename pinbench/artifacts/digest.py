"""SHA-256 digests as a value type, and streamed hashing of files.

Hashing reads into one reused buffer with ``readinto`` so that the only per-byte work is
OpenSSL's SHA-256 (``hashlib`` releases the GIL for large updates): throughput is the same
as ``openssl dgst -sha256`` on the same file (see ``docs/benchmarks.md``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pinbench.errors import UserError

CHUNK_SIZE = 4 * 1024 * 1024
_HEX = re.compile(r"[0-9a-f]{64}")

Progress = Callable[[int], None]
"""Called with the number of bytes just processed."""


class DigestError(UserError):
    """A text is not a sha256 digest."""

    def __init__(self, *, text: str) -> None:
        super().__init__(
            f"invalid sha256 digest {text!r}: expected 64 lowercase hex digits, "
            "optionally prefixed with 'sha256:'"
        )
        self.text = text


@dataclass(frozen=True, slots=True, order=True)
class Digest:
    """A sha256 digest; compared and hashed by its hex string."""

    hex: str

    def __post_init__(self) -> None:
        if not _HEX.fullmatch(self.hex):
            raise DigestError(text=self.hex)

    @classmethod
    def parse(cls, text: str) -> Digest:
        """Accept ``sha256:<hex>`` or bare ``<hex>``."""
        value = text.removeprefix("sha256:")
        if not _HEX.fullmatch(value):
            raise DigestError(text=text)
        return cls(value)

    @classmethod
    def of_bytes(cls, data: bytes) -> Digest:
        return cls(hashlib.sha256(data).hexdigest())

    @property
    def short(self) -> str:
        return self.hex[:12]

    def __str__(self) -> str:
        return self.hex


PREFETCH_CHUNKS = 4


class Prefetcher:
    """Asks the kernel to read the next chunks of a file ahead of us (``POSIX_FADV_WILLNEED``),
    so reading from disk overlaps hashing instead of alternating with it. A no-op for streams
    without a file descriptor."""

    def __init__(self, stream: BinaryIO) -> None:
        try:
            self._fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None
        self._until = 0

    def before_read(self, offset: int) -> None:
        if self._fd is None or not hasattr(os, "posix_fadvise"):
            return
        want = offset + PREFETCH_CHUNKS * CHUNK_SIZE
        if want > self._until:
            start = max(offset, self._until)
            try:
                os.posix_fadvise(self._fd, start, want - start, os.POSIX_FADV_WILLNEED)
            except OSError:
                self._fd = None
                return
            self._until = want


def hash_stream(stream: BinaryIO, *, progress: Progress | None = None) -> tuple[Digest, int]:
    """Hash a stream to its end; return the digest and the number of bytes."""
    hasher = hashlib.sha256()
    buffer = bytearray(CHUNK_SIZE)
    view = memoryview(buffer)
    total = 0
    prefetch = Prefetcher(stream)
    while True:
        prefetch.before_read(total)
        n = stream.readinto(view)  # type: ignore[attr-defined]
        if not n:
            break
        chunk = view[:n]
        hasher.update(chunk)
        total += n
        if progress is not None:
            progress(n)
    return Digest(hasher.hexdigest()), total


def hash_file(path: Path, *, progress: Progress | None = None) -> tuple[Digest, int]:
    """Return the sha256 digest and size of a file, reading it once."""
    with path.open("rb", buffering=0) as f:
        return hash_stream(f, progress=progress)
