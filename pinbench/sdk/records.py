"""What the API's methods answer with, and the error for what a server does not offer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.errors import UserError


class LocalOnly(UserError):
    """An operation a server does not offer through its API (it needs this machine's store)."""

    def __init__(self, *, operation: str, url: str) -> None:
        super().__init__(
            f"{operation} works on a local registry only; this one is the server at {url} "
            "(unset PINBENCH_URL, or run it where the server's PINBENCH_HOME is)"
        )
        self.operation = operation
        self.url = url

    def __reduce__(self) -> tuple[Any, ...]:
        return (_local_only, (self.operation, self.url))


def _local_only(operation: str, url: str) -> LocalOnly:
    return LocalOnly(operation=operation, url=url)


@dataclass(frozen=True)
class Published:
    """What ``publish`` did: the version, its manifest digest, and whether it was new."""

    ref: str
    manifest_digest: str
    created: bool
    files: int
    bytes: int
    new_blobs: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "ref": self.ref,
            "manifest_digest": self.manifest_digest,
            "created": self.created,
            "files": self.files,
            "bytes": self.bytes,
        }
        if self.new_blobs is not None:
            out["new_blobs"] = self.new_blobs
        return out
