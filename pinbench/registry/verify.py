"""Verification: every byte a lockfile pins is checked against its sha256 before use.

Unchanged files are not re-hashed (the store's verified-state cache); a changed or tampered
file is always hashed again and a mismatch names the file and both digests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select

from pinbench.artifacts.digest import Digest, Progress
from pinbench.db.models import Artifact
from pinbench.errors import PinbenchError, UserError
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace


@dataclass(frozen=True, slots=True)
class FileCheck:
    label: str
    sha256: str
    size: int
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


class VerificationFailed(UserError):
    def __init__(self, *, failures: list[FileCheck]) -> None:
        lines = [f"{len(failures)} pinned item(s) failed verification:"]
        lines += [f"  {f.error}" for f in failures]
        super().__init__("\n".join(lines))
        self.failures = failures


def verify_lockfile(
    ws: Workspace,
    lock: Lockfile,
    *,
    progress: Callable[[str, int], Progress] | None = None,
) -> list[FileCheck]:
    """Check every pinned file (and the registry's manifest digests); raise on any failure."""
    checks: list[FileCheck] = []
    for art in lock.body.artifacts:
        for f in art.files:
            label = f"{art.ref}:{f.path}"
            try:
                ws.store.verify(
                    Digest(f.sha256),
                    label=label,
                    size=f.size,
                    progress=progress(label, f.size) if progress else None,
                )
                error = None
            except PinbenchError as exc:
                error = str(exc)
            checks.append(FileCheck(label, f.sha256, f.size, error))
    checks.extend(_check_manifests(ws, lock))
    failures = [c for c in checks if not c.ok]
    if failures:
        raise VerificationFailed(failures=failures)
    return checks


def _check_manifests(ws: Workspace, lock: Lockfile) -> list[FileCheck]:
    """Where the registry holds a pinned artifact, its manifest digest must be the pinned one."""
    out = []
    with ws.transaction() as session:
        for art in lock.body.artifacts:
            stored = session.scalar(
                select(Artifact.manifest_digest).where(
                    Artifact.kind == art.kind,
                    Artifact.name == art.name,
                    Artifact.version == art.version,
                )
            )
            error = None
            if stored is not None and stored != art.manifest_digest:
                error = (
                    f"manifest of {art.ref} in the registry has sha256 {stored}, "
                    f"the lockfile pins {art.manifest_digest}"
                )
            out.append(FileCheck(f"{art.ref}:manifest", art.manifest_digest, 0, error))
    return out
