"""The content-addressed blob store: files kept by sha256 under ``HOME/blobs/ab/abcdef...``.

Writes are atomic (temp file in the store, fsync, rename, fsync of the directory); a blob that
exists is never rewritten, but writing it again *touches* it (``touch``: its modification time
set to now), because ``gc --blobs`` measures a blob's age from that time: a run that writes a
blob the store already has (the same outputs as a deleted run) must not find it collected
before its record names it (decision 190). Every read path that feeds a run goes through
``verify``.

The temp file is made on the blobs' own filesystem (``BlobStore.staging``), so that the rename
never crosses a mount: ``blobs/`` may be a filesystem of its own. A filesystem that runs out
of space while a blob is written raises ``StoreFull`` with the temp file removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar

from pinbench.artifacts.copy import copy_hashing, copy_plain
from pinbench.artifacts.digest import Digest, Progress
from pinbench.artifacts.scratch import scratch_file
from pinbench.artifacts.store_errors import BlobMissing as BlobMissing
from pinbench.artifacts.store_errors import ChecksumMismatch as ChecksumMismatch
from pinbench.artifacts.store_errors import SizeMismatch as SizeMismatch
from pinbench.artifacts.store_errors import StoreFull as StoreFull
from pinbench.artifacts.store_errors import out_of_space as out_of_space
from pinbench.artifacts.verified import FileState, VerifiedCache, ensure_key
from pinbench.errors import SystemFailure

if TYPE_CHECKING:
    from pinbench.artifacts.objects import Upload


_HEX = re.compile(r"[0-9a-f]{64}")
_SHARD = re.compile(r"[0-9a-f]{2}")

STAGING = ".staging"
"""The folder in ``blobs/`` holding the staging scratch when ``tmp`` is on another
filesystem (its ``tmp`` and ``owners``, as in the home); never a blob's two-letter folder."""


@dataclass(frozen=True, slots=True)
class StagedBlob:
    """A file hashed and written into the store's temp area, not yet visible by digest."""

    temp: Path
    digest: Digest
    size: int


@dataclass(frozen=True, slots=True)
class Stored:
    """What lies among the blobs: ``where`` is its name under the store's root
    (``blobs/ab/abcdef...``), ``digest`` its hex or None for a stray (a name that is not a
    blob's), ``mtime`` the later of its modification and change times."""

    where: str
    digest: str | None
    size: int
    mtime: float


class StageWriter:
    """Bytes arriving in pieces (an HTTP upload) hashed and written into the store's temp
    area as they come; ``finish`` checks them against what was declared."""

    def __init__(self, tmp: Path) -> None:
        self._tmp = tmp
        with out_of_space(tmp):
            fd, self.temp = scratch_file(tmp, "upload")
        self._file = os.fdopen(fd, "wb")
        self._hasher = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        """Write a piece; on a full filesystem ``StoreFull`` (the caller aborts)."""
        with out_of_space(self._tmp):
            self._file.write(data)
        self._hasher.update(data)
        self.size += len(data)

    def finish(self, *, label: str, expected: Digest, size: int | None) -> StagedBlob:
        """Close and check; on a mismatch the temp file is removed and the error raised."""
        try:
            with out_of_space(self._tmp):
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
            actual = Digest(self._hasher.hexdigest())
            if actual != expected:
                raise ChecksumMismatch(path=label, expected=expected, actual=actual)
            if size is not None and size != self.size:
                raise SizeMismatch(path=label, expected=size, actual=self.size)
        except BaseException:
            self.abort()
            raise
        return StagedBlob(self.temp, actual, self.size)

    def abort(self) -> None:
        with contextlib.suppress(OSError):  # a full filesystem fails the flush on close
            self._file.close()
        self.temp.unlink(missing_ok=True)


class BlobStore:
    remote: ClassVar[bool] = False
    """True where the blobs are kept elsewhere (a bucket) and the files here are copies."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.blobs = root / "blobs"
        self.tmp = root / "tmp"
        self.cache_key = root / "keys" / "verified-cache.key"
        self.cache = VerifiedCache(root / "cache" / "verified.sqlite", self.cache_key)

    def create(self) -> None:
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        ensure_key(self.cache_key)

    def staging(self) -> Path:
        """The scratch folder for bytes bound for the store, on the blobs' filesystem so that
        committing them is a rename: ``tmp`` when it is on the same filesystem as ``blobs``
        (the usual home), else ``blobs/.staging/tmp`` (``blobs`` mounted on its own).
        ``scratch.reclaim`` works on either (its owner locks are beside it)."""
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        if os.stat(self.tmp).st_dev == os.stat(self.blobs).st_dev:
            return self.tmp
        own = self.blobs / STAGING / "tmp"
        own.mkdir(parents=True, exist_ok=True)
        return own

    def scratch_folders(self) -> list[Path]:
        """Every folder that holds this home's scratch: ``tmp``, and the staging folder in
        ``blobs`` when one was made."""
        own = self.blobs / STAGING / "tmp"
        return [self.tmp, own] if own.is_dir() else [self.tmp]

    def path(self, digest: Digest) -> Path:
        return self.blobs / digest.hex[:2] / digest.hex

    def has(self, digest: Digest) -> bool:
        return self.path(digest).is_file()

    def local(self, digest: Digest) -> Path:
        """Where the blob's bytes are on this machine (not checked: ``verify`` checks them).
        A store on object storage downloads them into its local cache first."""
        return self.path(digest)

    def listing(self) -> Iterator[Stored]:
        """The blobs and the strays among them, in name order (``fsck``, ``gc --blobs``)."""
        if not self.blobs.is_dir():
            return
        for sub in sorted(self.blobs.iterdir()):
            if sub.name == STAGING:
                continue
            if not sub.is_dir() or not _SHARD.fullmatch(sub.name):
                yield Stored(f"blobs/{sub.name}", None, 0, 0.0)
                continue
            for entry in sorted(sub.iterdir()):
                where = f"blobs/{sub.name}/{entry.name}"
                if not (entry.is_file() and _HEX.fullmatch(entry.name)) or (
                    entry.name[:2] != sub.name
                ):
                    yield Stored(where, None, 0, 0.0)
                    continue
                try:
                    st = entry.stat()
                except FileNotFoundError:  # removed since it was listed
                    continue
                yield Stored(where, entry.name, st.st_size, max(st.st_mtime, st.st_ctime))

    def stage(
        self,
        source: Path,
        *,
        label: str,
        expected: Digest | None = None,
        progress: Progress | None = None,
    ) -> StagedBlob:
        """Copy ``source`` into the temp area while hashing it: one read of the bytes. When the
        verified-state cache vouches for the file (``pinbench digest`` or ``verify`` hashed it
        and it has not changed since), the bytes are copied by the kernel without hashing them
        again, and the file's state is checked once more after the copy: a file that changed
        meanwhile is copied again, hashing.

        Raises ``ChecksumMismatch`` (and leaves nothing behind) when ``expected`` differs.
        """
        folder = self.staging()
        with out_of_space(folder):
            fd, temp = scratch_file(folder, "stage")
        try:
            try:
                with source.open("rb", buffering=0) as src, out_of_space(folder):
                    digest, size = self._copy(source, src, fd, progress)
            finally:
                os.close(fd)
            if expected is not None and digest != expected:
                raise ChecksumMismatch(path=label, expected=expected, actual=digest)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return StagedBlob(temp, digest, size)

    def _copy(
        self, source: Path, src: BinaryIO, fd: int, progress: Progress | None
    ) -> tuple[Digest, int]:
        before = FileState.of(os.fstat(src.fileno()))  # the open file's inode, not the name's
        vouched = self.cache.lookup(source.resolve(), before)
        if vouched is not None:
            size = copy_plain(src.fileno(), fd, progress=progress)
            if size == before.size and FileState.of(os.fstat(src.fileno())) == before:
                return vouched, size
            os.ftruncate(fd, 0)  # changed while copied: start again, hashing
            os.lseek(fd, 0, os.SEEK_SET)
            src.seek(0)
        return copy_hashing(src, fd, progress=progress)

    def writer(self) -> StageWriter:
        """Stage bytes that arrive in pieces; see ``StageWriter``."""
        return StageWriter(self.staging())

    def commit(self, staged: StagedBlob) -> bool:
        """Move a staged blob to its address; return False if the store already had it (then
        it is touched: ``touch``)."""
        target = self.path(staged.digest)
        if target.exists() and self.touch(staged.digest):
            staged.temp.unlink(missing_ok=True)
            return False
        with out_of_space(self.blobs):
            target.parent.mkdir(parents=True, exist_ok=True)
        staged.temp.chmod(0o444)
        os.replace(staged.temp, target)
        _fsync_dir(target.parent)
        self.cache.record(target.resolve(), _state(target), staged.digest)
        return True

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's write lock (``flock``): blobs made visible and the rows that
        reference them are written under it, so removing an unreferenced blob never races
        a publish that is about to reference it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / "store.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def discard(self, staged: StagedBlob) -> None:
        staged.temp.unlink(missing_ok=True)

    def remove(self, digest: Digest) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(digest).unlink()

    def stored_at(self, digest: Digest) -> float | None:
        """The blob's ``Stored.mtime`` as it is now; None when it is not there."""
        try:
            st = self.path(digest).stat()
        except FileNotFoundError:
            return None
        return max(st.st_mtime, st.st_ctime)

    def touch(self, digest: Digest) -> bool:
        """Set the blob's modification time to now, the time ``gc --blobs`` measures its age
        from (``Stored.mtime``); False when that cannot be done (the blob removed meanwhile,
        or a file this user may not change the time of): the caller writes it anew."""
        try:
            os.utime(self.path(digest))
        except OSError:
            return False
        return True

    def put_bytes(self, data: bytes) -> Digest:
        """Store ``data`` (a run's results, an attestation): written when new, touched when the
        store has it. The check and the touch are made under the store's lock, which
        ``gc --blobs`` holds from listing the blobs to removing them: a blob it listed as old
        is either removed before this looks (then written again) or touched before it lists."""
        digest = Digest.of_bytes(data)
        with self.locked():
            if self.has(digest) and self.touch(digest):
                return digest
        folder = self.staging()
        with out_of_space(folder):
            fd, name = scratch_file(folder, "bytes")
        try:
            with out_of_space(folder), os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            self.commit(StagedBlob(name, digest, len(data)))
        except BaseException:
            name.unlink(missing_ok=True)
            raise
        return digest

    def verify(
        self,
        digest: Digest,
        *,
        label: str,
        size: int | None = None,
        progress: Progress | None = None,
        rehash: bool = False,
    ) -> Path:
        """Check that the blob exists and its bytes hash to ``digest``; return its path.
        ``rehash``: read the bytes even if the verified-state cache vouches for them."""
        target = self.path(digest)
        if not target.is_file():
            raise BlobMissing(path=label, digest=digest)
        actual, actual_size, _ = self.cache.digest(target, progress=progress, rehash=rehash)
        if actual != digest:
            raise ChecksumMismatch(path=label, expected=digest, actual=actual)
        if size is not None and actual_size != size:
            raise SizeMismatch(path=label, expected=size, actual=actual_size)
        return target

    def check(
        self,
        digest: Digest,
        *,
        label: str,
        size: int | None = None,
        progress: Progress | None = None,
        rehash: bool = False,
    ) -> None:
        """Check the store's own bytes of the blob (``pinbench verify``, ``fsck``), making no
        copy: here the home's file, as ``verify``; on object storage, the bucket's bytes."""
        self.verify(digest, label=label, size=size, progress=progress, rehash=rehash)

    @contextlib.contextmanager
    def held(self, digests: Iterable[Digest]) -> Iterator[None]:
        """Keep these blobs' files here while the block runs (a run reads them): a home's
        files always stay; a store on object storage keeps its copies from eviction."""
        yield

    def uploads(self) -> Iterator[Upload]:
        """Uploads left incomplete (``fsck``, ``gc --blobs``): none where a write is a rename."""
        return iter(())

    def abort(self, upload: Upload) -> None:
        raise NotImplementedError("a home's folder has no incomplete uploads")

    def iter_digests(self) -> Iterator[Digest]:
        if not self.blobs.is_dir():
            return
        for sub in sorted(self.blobs.iterdir()):
            if sub.name == STAGING:
                continue
            for blob in sorted(sub.iterdir()):
                yield Digest(blob.name)


def _state(path: Path) -> FileState:
    return FileState.of(path.stat())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:  # pragma: no cover - platform without directory fds
        raise SystemFailure(f"cannot open directory {path}: {exc}") from exc
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
