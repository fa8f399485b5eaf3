"""The blob store on S3-compatible object storage (decision 151).

The bucket holds the blobs under the same names as a home's folder (``PREFIX/blobs/ab/
abcdef...``) and is the truth: ``has``, ``listing``, ``remove`` and ``check`` ask it. The
home's ``blobs`` folder becomes a local cache of verified copies, because a run reads files
(its runner hard-links them into a model folder):

- a write is staged and hashed locally as on the filesystem (``stage``, ``writer``), then
  ``commit`` uploads it (in parts above ``Bucket.multipart_bytes``) before it is renamed
  into the cache, so the object exists before any row that references it is written;
- a read (``verify``, ``local``) of a blob not in the cache downloads it into the store's
  staging folder, hashing while it downloads, and renames it into the cache only when its
  sha256 is its name: wrong bytes raise ``ChecksumMismatch`` and leave nothing behind.
- ``check`` (``pinbench verify``, ``fsck``, restore's check) hashes the bucket's bytes as they
  stream by and keeps none of them: a warm copy vouches for nothing there (decision 210);
  ``copy_out`` (``pinbench backup``) writes them into a backup as they are hashed, the local
  copies neither read nor made (decision 284).
- the copies are bounded, least recently used evicted first (``pinbench.artifacts.copies``);
  a run holds those it reads (``held``).
- multipart uploads left incomplete (a process killed mid-upload) are listed by ``uploads``
  and aborted by ``abort`` (``fsck`` reports them, ``gc --blobs`` aborts the stale ones).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pinbench.artifacts.copies import DEFAULT_MAX, Copies
from pinbench.artifacts.digest import Digest, Progress
from pinbench.artifacts.objects import (
    PROBE_S,
    Bucket,
    ObjectStoreFailure,
    Probed,
    Upload,
)
from pinbench.artifacts.scratch import scratch_file
from pinbench.artifacts.store import (
    BlobMissing,
    BlobStore,
    ChecksumMismatch,
    SizeMismatch,
    StagedBlob,
    Stored,
    out_of_space,
)
from pinbench.artifacts.store_errors import write_refusal
from pinbench.errors import PinbenchError, UserError

_HEX = re.compile(r"[0-9a-f]{64}")
PROBE_PREFIX = "ready/"
"""Where readiness's write probe puts its object (under the store's prefix, beside
``blobs/``): reserved, never a blob's key. A versioned bucket keeps each probe's versions;
a lifecycle rule on this prefix expires them."""
PROBE_BYTES = b"pinbench readiness probe\n"


def _probe_cause(step: str, exc: Exception) -> str:
    """A probe's failure as readiness shows it: the S3 error code and status, no names."""
    response: dict[str, Any] = getattr(exc, "response", None) or {}
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    code = response.get("Error", {}).get("Code", "unknown")
    if step.startswith("HEAD") and status == 404:
        return "no such bucket"
    if status == 403:
        return "access denied (the credentials or the bucket's policy)"
    if step.startswith("HEAD"):
        return f"it answered HTTP {status}"
    verb = "writes" if step.startswith("PUT") else "deletes"
    return f"it refuses {verb}: {code} (HTTP {status})"


class S3BlobStore(BlobStore):
    remote = True

    def __init__(self, root: Path, bucket: Bucket, *, cache_max: int = DEFAULT_MAX) -> None:
        super().__init__(root)
        self.bucket = bucket
        self.copies = Copies(self.blobs, root / "cache" / "copies", cache_max)
        self._prober: Any = None
        self._probe_name = uuid.uuid4().hex  # this process's own: servers sharing a bucket

    @staticmethod
    def relative(digest: Digest) -> str:
        return f"blobs/{digest.hex[:2]}/{digest.hex}"

    def has(self, digest: Digest) -> bool:
        return self.bucket.exists(self.relative(digest))

    def commit(self, staged: StagedBlob) -> bool:
        """Upload a staged blob (unless the bucket has it: then it is touched), then keep it
        in the local cache; return False if the bucket already had it."""
        try:
            if self.has(staged.digest) and self.touch(staged.digest):
                staged.temp.unlink(missing_ok=True)
                return False
            self._upload(staged.temp, self.relative(staged.digest))
        except BaseException:
            staged.temp.unlink(missing_ok=True)
            raise
        self._cached(staged)
        return True

    def _cached(self, staged: StagedBlob) -> None:
        """Move a staged blob the bucket holds into the local copies (unless one is there)."""
        if super().commit(staged):
            self.copies.used(staged.digest)
            self.copies.added(staged.size)
        else:  # already cached: the upload was all that was missing
            staged.temp.unlink(missing_ok=True)
            self.copies.used(staged.digest)

    def stored_at(self, digest: Digest) -> float | None:
        """The object's ``LastModified``; None when the bucket lacks it."""
        return self.bucket.modified(self.relative(digest))

    def touch(self, digest: Digest) -> bool:
        """The object's ``LastModified`` made now (``Bucket.touch``), and the cached copy's
        time with it; False when the bucket lacks it."""
        if not self.bucket.touch(self.relative(digest)):
            return False
        super().touch(digest)  # the local cache's copy, if any
        return True

    def upload_file(self, source: Path, digest: Digest) -> bool:
        """Upload ``source``, whose bytes the caller has hashed to ``digest`` (``restore``
        hashes a backup's files first), unless the bucket has the blob; True if uploaded."""
        if self.has(digest):
            return False
        self._upload(source, self.relative(digest))
        return True

    def _upload(self, source: Path, relative: str) -> None:
        """``Bucket.upload``; a write the store answered with a refusal is ``WriteRefused``,
        naming the bucket and its answer."""
        location = self.bucket.location
        try:
            self.bucket.upload(source, relative)
        except ObjectStoreFailure as exc:
            failure = exc
        else:
            return
        refusal = write_refusal(failure, bucket=location.bucket, key=location.key(relative))
        raise refusal from failure.__context__

    def probe_writes(self) -> Probed | None:
        """Whether the bucket takes a write (readiness): one tiny object put under
        ``PROBE_PREFIX`` and deleted, each call tried once with ``PROBE_S`` to connect and to
        read; None when both succeed, else what went wrong (its ``cause`` names no host,
        bucket or credential). Not a HEAD: a bucket that answers but refuses writes (its disk
        full, read-only) is caught."""
        from botocore.exceptions import BotoCoreError, ClientError

        client, location = self._probe_client(), self.bucket.location
        key = location.key(f"{PROBE_PREFIX}{self._probe_name}")
        step = "HEAD of the bucket"
        try:
            client.head_bucket(Bucket=location.bucket)  # never a write that makes a bucket
            step = f"PUT {key}"
            client.put_object(Bucket=location.bucket, Key=key, Body=PROBE_BYTES)
            step = f"DELETE {key}"
            client.delete_object(Bucket=location.bucket, Key=key)
        except ClientError as exc:
            return Probed(_probe_cause(step, exc), f"object storage {location}: {step}: {exc}")
        except BotoCoreError as exc:
            full = f"object storage {location}: {step}: {exc}"
            return Probed(f"unreachable ({type(exc).__name__})", full)
        return None

    def _probe_client(self) -> Any:
        """The write probe's client, made on first use: one try, short timeouts."""
        if self._prober is None:
            import boto3
            from botocore.config import Config

            self._prober = boto3.session.Session().client(
                "s3",
                endpoint_url=self.bucket.location.endpoint,
                config=Config(
                    retries={"max_attempts": 1, "mode": "standard"},
                    connect_timeout=PROBE_S,
                    read_timeout=PROBE_S,
                ),
            )
        return self._prober

    def presigned(self, digest: Digest, *, label: str) -> str:
        """A URL from which a client GETs the blob straight from the bucket (it checks the
        sha256 itself); ``BlobMissing`` when the bucket lacks it."""
        relative = self.relative(digest)
        if not self.bucket.exists(relative):
            raise BlobMissing(path=label, digest=digest)
        return self.bucket.presign(relative)

    def commit_many(self, staged: list[StagedBlob]) -> list[Digest]:
        """``commit`` each (``bulk.commit_blobs``); the digests new to the bucket. When one
        fails, the rest of the staged files are removed and the objects this call uploaded
        are deleted again (no row references them yet: the caller holds the store's lock)."""
        made: list[Digest] = []
        try:
            for blob in staged:
                if self.commit(blob):
                    made.append(blob.digest)
        except BaseException:
            for blob in staged:
                blob.temp.unlink(missing_ok=True)
            for digest in made:
                with contextlib.suppress(PinbenchError):
                    self.remove(digest)
            raise
        return made

    def remove(self, digest: Digest) -> None:
        self.bucket.delete(self.relative(digest))
        super().remove(digest)
        self.copies.forget(digest)

    def local(self, digest: Digest) -> Path:
        target = self.path(digest)
        if target.is_file():
            self.copies.used(digest)
        else:
            with contextlib.suppress(UserError):  # the caller's read reports what is wrong
                self._download(digest, label=f"blob {digest.hex}")
        return target

    @contextlib.contextmanager
    def held(self, digests: Iterable[Digest]) -> Iterator[None]:
        with self.copies.held(digests):
            yield

    def verify(
        self,
        digest: Digest,
        *,
        label: str,
        size: int | None = None,
        progress: Progress | None = None,
        rehash: bool = False,
    ) -> Path:
        """As ``BlobStore.verify``, on the local copy a caller then reads; a blob not in the
        local cache (or any, with ``rehash``) is downloaded from the bucket and hashed on the
        way."""
        if rehash or not self.path(digest).is_file():
            actual_size = self._download(digest, label=label, progress=progress)
            if size is not None and actual_size != size:
                raise SizeMismatch(path=label, expected=size, actual=actual_size)
            return self.path(digest)
        self.copies.used(digest)
        return super().verify(digest, label=label, size=size, progress=progress)

    def check(
        self,
        digest: Digest,
        *,
        label: str,
        size: int | None = None,
        progress: Progress | None = None,
        rehash: bool = False,
    ) -> None:
        """Hash the bucket's bytes of the blob as they stream by, keeping none of them (a
        local copy, warm or not, is neither read nor made); ``rehash`` changes nothing: the
        bucket's bytes are always read."""
        chunks = self.bucket.chunks(self.relative(digest))
        if chunks is None:
            raise BlobMissing(path=label, digest=digest)
        hasher, actual_size = hashlib.sha256(), 0
        for chunk in chunks:
            hasher.update(chunk)
            actual_size += len(chunk)
            if progress is not None:
                progress(len(chunk))
        actual = Digest(hasher.hexdigest())
        if actual != digest:
            raise ChecksumMismatch(path=label, expected=digest, actual=actual)
        if size is not None and actual_size != size:
            raise SizeMismatch(path=label, expected=size, actual=actual_size)

    def copy_out(
        self, digest: Digest, target: Path, *, label: str, progress: Progress | None = None
    ) -> int:
        """Write the bucket's bytes of the blob to ``target`` (made new, read-only), hashing
        them as they stream by (a backup takes what the bucket holds, decision 284); the size.
        A local copy is neither read nor made. ``BlobMissing`` when the bucket lacks it,
        ``ChecksumMismatch`` when its bytes are not its name's: then no file is left."""
        chunks = self.bucket.chunks(self.relative(digest))
        if chunks is None:
            raise BlobMissing(path=label, digest=digest)
        temp = target.with_name(f".{target.name}.part")
        try:
            with temp.open("xb") as out:
                size = _written_hashed(out, chunks, digest, label=label, progress=progress)
            temp.chmod(0o444)
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return size

    def _download(self, digest: Digest, *, label: str, progress: Progress | None = None) -> int:
        """Fetch the object into staging, hashing it; rename it into the cache only if it
        hashes to ``digest``. The size fetched."""
        chunks = self.bucket.chunks(self.relative(digest))
        if chunks is None:
            raise BlobMissing(path=label, digest=digest)
        folder = self.staging()
        with out_of_space(folder):
            fd, temp = scratch_file(folder, "fetch")
        try:
            with out_of_space(folder), os.fdopen(fd, "wb") as out:
                size = _written_hashed(out, chunks, digest, label=label, progress=progress)
            target = self.path(digest)
            target.unlink(missing_ok=True)  # a cached copy, replaced by the bytes just checked
            self._cached(StagedBlob(temp, digest, size))
        finally:
            temp.unlink(missing_ok=True)
        return size

    def listing(self) -> Iterator[Stored]:
        """The bucket's objects under ``PREFIX/blobs/``; a key not named ``ab/abcdef...``
        (its own two first letters) is a stray."""
        for item in self.bucket.listing("blobs/"):
            parts = item.relative.split("/")
            name = parts[-1]
            blob = len(parts) == 3 and bool(_HEX.fullmatch(name)) and name[:2] == parts[1]
            yield Stored(item.relative, name if blob else None, item.size, item.mtime)

    def iter_digests(self) -> Iterator[Digest]:
        for entry in self.listing():
            if entry.digest is not None:
                yield Digest(entry.digest)

    def uploads(self) -> Iterator[Upload]:
        """The multipart uploads under ``PREFIX/blobs/`` begun and never completed or aborted
        (a process killed mid-upload): the bucket keeps their parts until they are aborted."""
        return self.bucket.uploads("blobs/")

    def abort(self, upload: Upload) -> None:
        self.bucket.abort(upload)


def open_store(
    home: Path, blobs: str, *, endpoint: str | None, cache_max: str | None = None
) -> S3BlobStore:
    """The store of ``home`` with its blobs at ``blobs`` (``s3://BUCKET[/PREFIX]``), its local
    copies bounded by ``cache_max`` (``PINBENCH_CACHE_MAX``'s text; unset: 20 GiB)."""
    from pinbench.artifacts.copies import cache_size
    from pinbench.artifacts.objects import Location

    location, limit = Location.parse(blobs, endpoint=endpoint), cache_size(cache_max)
    return S3BlobStore(home, Bucket(location), cache_max=limit)


def _written_hashed(
    out: BinaryIO,
    chunks: Iterable[bytes],
    digest: Digest,
    *,
    label: str,
    progress: Progress | None,
) -> int:
    """Write ``chunks`` to ``out``, hashing them as they go, and sync it; the size.
    ``ChecksumMismatch`` when the bytes are not ``digest``'s (the caller removes the file)."""
    hasher, size = hashlib.sha256(), 0
    for chunk in chunks:
        out.write(chunk)
        hasher.update(chunk)
        size += len(chunk)
        if progress is not None:
            progress(len(chunk))
    out.flush()
    os.fsync(out.fileno())
    actual = Digest(hasher.hexdigest())
    if actual != digest:
        raise ChecksumMismatch(path=label, expected=digest, actual=actual)
    return size
