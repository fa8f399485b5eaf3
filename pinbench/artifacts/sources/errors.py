"""What can go wrong fetching from a source; each error names the source and the reason."""

from __future__ import annotations

from pathlib import Path

from pinbench.errors import SystemFailure, UserError


class SourceError(UserError):
    """The source does not have what was asked for (no such revision, path, member, ...)."""

    def __init__(self, *, source: str, reason: str) -> None:
        super().__init__(f"source {source}: {reason}")
        self.source = source
        self.reason = reason


class SourceUnavailable(SystemFailure):
    """The source could not be reached or failed (network, server error, tool failure)."""

    def __init__(self, *, source: str, reason: str) -> None:
        super().__init__(f"source {source}: {reason}")
        self.source = source
        self.reason = reason


class DownloadInterrupted(SystemFailure):
    """A download stopped before its end, after every retry; the bytes so far are kept (not
    as a blob) so the next fetch resumes from them."""

    def __init__(
        self,
        *,
        source: str,
        received: int,
        total: int | None,
        attempts: int,
        reason: str,
        part: Path,
    ) -> None:
        of = f" of {total}" if total is not None else ""
        super().__init__(
            f"download of {source} interrupted after {received}{of} bytes "
            f"({attempts} attempt(s); last: {reason}). The partial download is kept at {part} "
            "(not as a blob) and the next fetch resumes from it"
        )
        self.source = source
        self.received = received
        self.total = total
        self.attempts = attempts
        self.reason = reason
        self.part = part


class Md5Mismatch(UserError):
    """Bytes do not match a legacy md5 digest (declared in a manifest, or DVC's)."""

    def __init__(self, *, path: str, expected: str, actual: str, declared_by: str) -> None:
        super().__init__(
            f"md5 mismatch for {path}: {declared_by} says {expected}, the bytes have {actual}"
        )
        self.path = path
        self.expected = expected
        self.actual = actual
        self.declared_by = declared_by
