"""Verification: every byte a lockfile pins is checked against its sha256 before use.

First the lockfile itself is checked against this registry (``pinbench.registry.trust``):
every section is re-derived from the manifests it pins, so nothing is fetched or opened on a
lockfile's say-so.

Unchanged files are not re-hashed (the store's verified-state cache); a changed or tampered
file is always hashed again and a mismatch names the file and both digests. What is checked is
the store's own bytes (``BlobStore.check``): with the blobs in object storage, the bucket's,
streamed and not kept, whatever copy this machine has (decision 210); a run checks the copies
it then reads (``for_run``). A file missing from
the store whose pinned source is remote (``https://``, ``hf://`` or ``dvc://`` at a commit) is
fetched from it first, and stored only when its bytes match the pin.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pinbench.artifacts.digest import Digest, Progress
from pinbench.errors import PinbenchError, UserError
from pinbench.registry.lockfile import LockedFile, Lockfile
from pinbench.registry.manifest_parts import REMOTE_SCHEMES
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.artifacts.ahead import HashesAhead
    from pinbench.artifacts.sources.fetch import Fetcher


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
    fetch: bool = True,
    say: Callable[[str], None] | None = None,
    rehash: bool = False,
    ahead: HashesAhead | None = None,
    for_run: bool = False,
) -> list[FileCheck]:
    """Check the lockfile against the registry, then every pinned file; raise on any failure.
    With ``fetch``, a file missing from the store is first fetched from its pinned source
    (never on a server: sources are fetched by the publishing client). ``rehash``: read every
    file's bytes, ignoring the verified-state cache. ``ahead``: blobs already hashed (same
    ``rehash``) while this was starting (``pinbench.artifacts.ahead``); those found intact are
    not read again. ``for_run``: the files are read here next (``run``): check the copies this
    machine will read (a store on object storage downloads those it lacks) rather than the
    store's own bytes. An object store that cannot be reached (``ObjectStoreUnavailable``) or a
    full disk (``StoreFull``) is raised as itself, never counted as files that failed."""
    check_against_registry(ws, lock)
    checks: list[FileCheck] = []
    intact: set[tuple[str, int]] = set()  # blobs checked here; files sharing bytes share one
    with ExitStack() as stack:
        fetcher: Fetcher | None = None  # made (its clients imported) for a file to fetch
        for art in lock.body.artifacts:
            for f in art.files:
                label = f"{art.ref}:{f.path}"
                if (f.sha256, f.size) in intact or (
                    ahead is not None and ahead.intact(f.sha256, f.size)
                ):
                    checks.append(FileCheck(label, f.sha256, f.size, None))
                    continue
                failed = None
                if fetch and _fetchable(ws, f):
                    if fetcher is None:
                        from pinbench.artifacts.sources.fetch import Fetcher

                        fetcher = stack.enter_context(Fetcher(ws.store, progress=progress, say=say))
                    failed = _fetch(ws, fetcher, f, label, say)
                check = failed or _check(ws, f, label, progress, rehash=rehash, for_run=for_run)
                if check.ok:
                    intact.add((f.sha256, f.size))
                checks.append(check)
    failures = [c for c in checks if not c.ok]
    if failures:
        raise VerificationFailed(failures=failures)
    return checks


def _fetchable(ws: Workspace, f: LockedFile) -> bool:
    return (
        f.source is not None
        and f.source.startswith(REMOTE_SCHEMES)
        and not ws.store.has(Digest(f.sha256))
    )


def _fetch(
    ws: Workspace,
    fetcher: Fetcher,
    f: LockedFile,
    label: str,
    say: Callable[[str], None] | None,
) -> FileCheck | None:
    """Fetch a missing file from its pinned source into the store; a failure is the check."""
    assert f.source is not None
    try:
        got = fetcher.fetch(f.source, label=label, sha256=Digest(f.sha256), md5=f.md5, size=f.size)
    except PinbenchError as exc:
        return FileCheck(label, f.sha256, f.size, str(exc))
    if got.staged is not None:
        with ws.store.locked():
            ws.store.commit(got.staged)
    if say is not None:
        say(f"fetched {label} from {f.source}")
    return None


def _check(
    ws: Workspace,
    f: LockedFile,
    label: str,
    progress: Callable[[str, int], Progress] | None,
    *,
    rehash: bool = False,
    for_run: bool = False,
) -> FileCheck:
    from pinbench.artifacts.objects import ObjectStoreUnavailable
    from pinbench.artifacts.store_errors import StoreFull

    checked = ws.store.verify if for_run else ws.store.check
    try:
        checked(
            Digest(f.sha256),
            label=label,
            size=f.size,
            progress=progress(label, f.size) if progress else None,
            rehash=rehash,
        )
    except (ObjectStoreUnavailable, StoreFull):
        raise  # the store away, the cache full: no file's fault (issue 72, item 4)
    except PinbenchError as exc:
        return FileCheck(label, f.sha256, f.size, str(exc))
    return FileCheck(label, f.sha256, f.size, None)


def check_against_registry(ws: Workspace, lock: Lockfile) -> None:
    """Refuse a lockfile this registry would not make (see ``pinbench.registry.trust``)."""
    from pinbench.registry.trust import rederive

    with ws.reads() as rows:
        rederive(rows, lock)
    if lock.body.chain is not None:  # a chain's direct wires against their graphs, as at lock
        from pinbench.registry.chain_signature import check_stored

        check_stored(ws, lock)
