"""Where an attestation's subjects are read from to be hashed: this registry's store, a
folder of files named like the subjects (``attest verify --blobs``), or a server's blobs
(downloaded and hashed here, never trusted for their digest)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.provenance.verify import BlobBytes, BlobDigest
    from pinbench.workspace import Workspace

MAX_READ = 64 * 1024 * 1024
"""results.json (the only subject read whole) is refused beyond 64 MiB."""


def store_blobs(ws: Workspace) -> tuple[BlobDigest, BlobBytes]:
    from pinbench.artifacts.digest import Digest

    def path(sha: str) -> Path | None:
        p = ws.store.local(Digest(sha))  # blobs in a bucket: its bytes, into the local copies
        return p if p.is_file() else None

    return files_by(path)


def folder_blobs(root: Path) -> tuple[BlobDigest, BlobBytes]:
    def by_name(name: str) -> Path | None:
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise UserError(f"subject name {name[:80]!r} is not a plain file name")
        p = root / name
        return p if p.is_file() else None

    return files_by(lambda sha: None, by_name)


def files_by(by_sha: Any, by_name: Any = None) -> tuple[BlobDigest, BlobBytes]:
    from pinbench.artifacts.digest import hash_file

    def find(name: str, sha: str) -> Path | None:
        found: Path | None = by_name(name) if by_name else by_sha(sha)
        return found

    def digest_of(name: str, sha: str) -> str | None:
        p = find(name, sha)
        return None if p is None else hash_file(p)[0].hex

    def read(name: str, sha: str) -> bytes | None:
        p = find(name, sha)
        if p is None or p.stat().st_size > MAX_READ:
            return None
        return p.read_bytes()

    return digest_of, read


class BlobServer(Protocol):
    """What reading a server's blobs needs of it (``pinbench.remote.Remote`` is one)."""

    def blob(self, digest: str) -> Iterator[bytes]: ...


def remote_blobs(remote: BlobServer) -> tuple[BlobDigest, BlobBytes]:
    from pinbench.artifacts.digest import Digest

    def chunks(sha: str) -> Any:
        return remote.blob(Digest(sha).hex)

    def digest_of(name: str, sha: str) -> str | None:
        h = hashlib.sha256()
        for chunk in chunks(sha):
            h.update(chunk)
        return h.hexdigest()

    def read(name: str, sha: str) -> bytes | None:
        out = bytearray()
        for chunk in chunks(sha):
            out += chunk
            if len(out) > MAX_READ:
                return None
        return bytes(out)

    return digest_of, read
