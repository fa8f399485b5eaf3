"""The blob store's errors: a blob whose bytes, size or presence is not what was pinned, a
filesystem that ran out of space while a blob was written (``out_of_space``), and an object
store that refused a write (``write_refusal``)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.objects import NoBucket, ObjectStoreFailure, ObjectStoreUnavailable
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


class WriteRefused(ObjectStoreFailure):
    """The object store answered a write with a refusal (its disk full, the bucket read-only or
    over its quota, a policy): ``bucket`` and its answer (``status``, ``code``, ``answer``: the
    S3 error's message) named; nothing was stored. The API answers 507."""

    def __init__(
        self, *, where: str, bucket: str, key: str, status: int | None, code: str, answer: str
    ) -> None:
        super().__init__(
            where=where,
            action=f"the write of {key}",
            reason=f"bucket {bucket!r} refused it: HTTP {status} {code}: {answer}; nothing was "
            "stored: make room in the object store (or lift its read-only mode, quota or "
            "policy), then try again",
        )
        self.bucket = bucket
        self.key = key
        self.status = status
        self.code = code
        self.answer = answer


class WriteRefusedForNow(WriteRefused, ObjectStoreUnavailable):
    """A refusal the store says may pass (an HTTP 5xx: its own failure, as a full disk is on
    SeaweedFS): an outage too, which a run's blobs wait out (decision 284)."""


def write_refusal(failure: ObjectStoreFailure, *, bucket: str, key: str) -> ObjectStoreFailure:
    """``failure`` of a write as ``WriteRefused`` when the store answered it (an S3 error code)
    other than to ask for a later try (``LATER``); else ``failure`` itself (no answer: an
    outage)."""
    answer = None if isinstance(failure, NoBucket) else _answer(failure)
    if answer is None:
        return failure
    status, code, message = answer
    if status == 503 or code in LATER:
        return failure
    kind = WriteRefusedForNow if isinstance(failure, ObjectStoreUnavailable) else WriteRefused
    return kind(
        where=failure.where, bucket=bucket, key=key, status=status, code=code, answer=message
    )


LATER = frozenset({"SlowDown", "ServiceUnavailable", "RequestTimeout"})
"""S3 error codes that ask the client to try again later: an outage, not a refusal."""


def _answer(exc: BaseException | None) -> tuple[int | None, str, str] | None:
    """The S3 answer (status, code, message) ``exc`` was raised beside, following its causes
    and contexts (s3transfer's upload error wraps the client's); None when none answered."""
    seen = 0
    while exc is not None and seen < 8:  # a chain of causes, bounded
        response = getattr(exc, "response", None)
        if isinstance(response, dict) and isinstance(response.get("Error"), dict):
            error = response["Error"]
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = str(error.get("Code") or "unknown")
            message = str(error.get("Message") or "")[:MESSAGE_CHARS]
            return (int(status) if status is not None else None), code, message
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


MESSAGE_CHARS = 300
"""The most of an S3 error's message a refusal repeats."""
