"""Many files into the blob store at once: the per-file costs that do not scale (a writer
thread, an ``fsync`` per blob and per folder, a cache transaction per blob) paid once.

A dataset of 100,000 small files staged one by one (``BlobStore.stage`` then ``commit``) spent
~45 ms per file on ``fsync``s and thread start-up: over an hour. ``BulkStager`` reads a small
file whole, hashes it and writes it to the store's temp area without syncing; ``flush`` then
makes every staged byte durable with one ``syncfs`` of the store's filesystem (each file's
``fsync`` where there is none). ``commit_blobs`` renames staged blobs to their addresses,
syncs each touched folder once and records them in the verified-state cache in one
transaction. What is durable, and when, is what ``BlobStore`` guarantees one blob at a time:
a blob is visible only after its bytes are on disk, and its name is on disk before the rows
that reference it are written.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.scratch import scratch_file
from pinbench.artifacts.store import (
    BlobStore,
    ChecksumMismatch,
    SizeMismatch,
    StagedBlob,
    out_of_space,
)
from pinbench.artifacts.verified import FileState

SMALL = 1 << 20
"""Files up to this size are read whole; larger ones are staged by ``BlobStore.stage``."""


class BulkStager:
    """Stage many files (each checked against its expected sha256 and size) in ``store``'s temp
    area; each new digest once. ``flush`` before the blobs are committed; ``discard`` on
    failure."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self._pending: dict[str, StagedBlob] = {}
        self._synced: set[str] = set()
        """Digests staged by ``BlobStore.stage`` (already synced)."""

    def stage(self, source: Path, *, label: str, expected: Digest, size: int | None) -> int:
        """Check ``source``'s bytes against ``expected`` (and ``size``); stage them unless the
        store or this stager has them. Returns the size."""
        with source.open("rb") as handle:
            data = handle.read(SMALL + 1)
        if len(data) > SMALL:
            return self._stage_large(source, label=label, expected=expected, size=size)
        actual = Digest(hashlib.sha256(data).hexdigest())
        if actual != expected:
            raise ChecksumMismatch(path=label, expected=expected, actual=actual)
        if size is not None and size != len(data):
            raise SizeMismatch(path=label, expected=size, actual=len(data))
        if expected.hex in self._pending or self.store.has(expected):
            return len(data)
        folder = self.store.staging()
        with out_of_space(folder):
            fd, temp = scratch_file(folder, "stage")
        try:
            with out_of_space(folder), os.fdopen(fd, "wb") as out:
                out.write(data)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        self._pending[expected.hex] = StagedBlob(temp, actual, len(data))
        return len(data)

    def _stage_large(self, source: Path, *, label: str, expected: Digest, size: int | None) -> int:
        blob = self.store.stage(source, label=label, expected=expected)
        if size is not None and size != blob.size:
            self.store.discard(blob)
            raise SizeMismatch(path=label, expected=size, actual=blob.size)
        if expected.hex in self._pending or self.store.has(expected):
            self.store.discard(blob)
        else:
            self._pending[expected.hex] = blob
            self._synced.add(expected.hex)
        return blob.size

    def flush(self) -> list[StagedBlob]:
        """Make every staged byte durable; the staged blobs, to commit."""
        unsynced = [b for d, b in self._pending.items() if d not in self._synced]
        if unsynced and not _sync_filesystem(self.store.staging()):
            for blob in unsynced:
                fd = os.open(blob.temp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        self._synced.update(self._pending)
        return list(self._pending.values())

    def discard(self) -> None:
        for blob in self._pending.values():
            self.store.discard(blob)
        self._pending.clear()


def _sync_filesystem(folder: Path) -> bool:
    """``syncfs`` the filesystem ``folder`` is on; False where it cannot be done."""
    from pinbench.libc import libc_function

    syncfs = libc_function("syncfs", "c_int")  # Linux's: flush the filesystem fd is on
    if syncfs is None:
        return False
    fd = os.open(folder, os.O_RDONLY)
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


def commit_blobs(store: BlobStore, staged: list[StagedBlob]) -> list[Digest]:
    """``BlobStore.commit`` for many blobs (each already synced): renamed to their addresses,
    each folder synced once, recorded in the verified-state cache at once. The digests that
    were new to the store. A store on object storage uploads them one by one
    (``S3BlobStore.commit_many``)."""
    s3 = sys.modules.get("pinbench.artifacts.s3store")  # a store in a bucket imported it
    if s3 is not None and isinstance(store, s3.S3BlobStore):
        made_there: list[Digest] = store.commit_many(staged)
        return made_there
    blobs = store.blobs.resolve() if store.blobs.exists() else store.blobs
    made: list[Digest] = []
    folders: set[Path] = set()
    recorded: list[tuple[Path, FileState, Digest]] = []
    for blob in staged:
        target = store.path(blob.digest)
        if target.exists():
            blob.temp.unlink(missing_ok=True)
            continue
        if target.parent not in folders:
            with out_of_space(store.blobs):
                target.parent.mkdir(parents=True, exist_ok=True)
            folders.add(target.parent)
        blob.temp.chmod(0o444)
        os.replace(blob.temp, target)
        made.append(blob.digest)
        real = blobs / target.parent.name / target.name
        recorded.append((real, FileState.of(os.stat(real)), blob.digest))
    for folder in folders:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    store.cache.record_many(recorded)
    return made
