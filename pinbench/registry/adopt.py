"""Adopting a lockfile's artifacts from another pinbench registry: a deliberate act.

A lockfile made elsewhere pins artifacts this registry does not hold, so it is refused
(``pinbench.registry.trust``). ``pinbench lockfile import LOCKFILE --from URL`` is the user's
decision to trust that registry for these versions: each missing artifact's manifest is read
from it and must hash to the digest the lockfile pins; each file's bytes are downloaded and
must hash to their sha256; then the lockfile must re-derive byte for byte from the adopted
manifests (with the versions already here). Only then are the versions published here, with
the adopter as publisher. Anything wrong leaves nothing behind. Adoption grants nothing a
manifest does not say: a pickled model still runs only with ``--allow-pickle``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pinbench.artifacts.store import SizeMismatch, StagedBlob
from pinbench.errors import UserError
from pinbench.registry.catalog import yank
from pinbench.registry.lockfile import LockedArtifact, LockedFile, Lockfile
from pinbench.registry.locking import Pinned
from pinbench.registry.manifest import Manifest, manifest_data, manifest_digest, parse_manifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.names import ArtifactRef
from pinbench.registry.publish import VersionConflict, commit_staged, requires_of
from pinbench.registry.publish import ref_of as publish_ref
from pinbench.registry.trust import check_pinned, check_shape, published, ref_of
from pinbench.workspace import Workspace


class ArtifactSource(Protocol):
    """Another registry, read-only. Nothing it returns is trusted: every byte is checked."""

    @property
    def where(self) -> str:
        """For messages: the registry's URL."""
        ...

    def artifact(self, ref: str) -> Any:
        """What that registry shows of ``KIND/NAME@VERSION``: ``manifest`` (as it stores it),
        ``files`` (path, size), ``yanked``, ``yank_reason`` (plain data, unchecked)."""
        ...

    def blob(self, digest: str) -> Iterator[bytes]:
        """The bytes of the blob with this sha256, in chunks."""
        ...


class BadSource(UserError):
    """The other registry's answer is not what a pinbench registry serves."""

    def __init__(self, *, ref: str, where: str, reason: str) -> None:
        super().__init__(f"{where} answered for {ref} with {reason}: nothing was imported")
        self.ref = ref
        self.where = where
        self.reason = reason


class ManifestNotPinned(UserError):
    """The other registry's manifest is not the one the lockfile pins."""

    def __init__(self, *, ref: str, where: str, pinned: str, got: str) -> None:
        super().__init__(
            f"{where} serves a manifest of {ref} with sha256 {got}; the lockfile pins {pinned}: "
            "nothing was imported"
        )
        self.ref = ref
        self.where = where
        self.pinned = pinned
        self.got = got


@dataclass(frozen=True, slots=True)
class Adopted:
    ref: str
    created: bool
    """False when this registry already held the version (same manifest digest)."""
    format: str | None
    """A model's format (``torch-pickle`` needs ``--allow-pickle`` to run)."""


@dataclass
class _Staged:
    ref: ArtifactRef
    manifest: Manifest
    checked: list[tuple[FileEntry, int]]
    pending: list[StagedBlob]
    yank_reason: str | None


def adopt(
    ws: Workspace, lock: Lockfile, source: ArtifactSource, *, publisher: str
) -> list[Adopted]:
    """Publish here the artifacts ``lock`` pins that this registry lacks, from ``source``,
    after every check has passed; return what was adopted and what was here already."""
    check_shape(lock)
    pinned = _already_here(ws, lock)
    staged: list[_Staged] = []
    try:
        for art in lock.body.artifacts:
            ref = ref_of(art)
            if ref in pinned:
                continue
            one = _stage(ws, source, art, ref)
            staged.append(one)
            pinned[ref] = _pinned(one, art.manifest_digest)
        check_pinned(lock, pinned)
    except BaseException:
        for one in staged:
            for blob in one.pending:
                ws.store.discard(blob)
        raise
    for one in staged:  # all checked: a commit fails only on a race, and removes its blobs
        commit_staged(ws, one.manifest, one.checked, one.pending, publisher=publisher, adopted=True)
        if one.yank_reason is not None:
            yank(ws, one.ref, f"yanked at {source.where}: {one.yank_reason}")
    new = {one.ref for one in staged}
    return [
        Adopted(
            ref=art.ref,
            created=ref_of(art) in new,
            format=_format_of(lock, art.kind, art.name),
        )
        for art in lock.body.artifacts
    ]


def _format_of(lock: Lockfile, kind: str, name: str) -> str | None:
    """A pinned model's format: its chain stage's, else the lockfile's model's."""
    if kind != "model" or lock.body.model is None:
        return None
    stages = lock.body.chain.stages if lock.body.chain is not None else []
    return next((s.format for s in stages if s.model == name), lock.body.model.format)


def _already_here(ws: Workspace, lock: Lockfile) -> dict[ArtifactRef, Pinned]:
    out = {}
    with ws.reads() as rows:
        for art in lock.body.artifacts:
            pin = published(rows, art)
            if pin is None:
                continue
            if pin.manifest_digest != art.manifest_digest:
                raise VersionConflict(
                    ref=ref_of(art),
                    existing_digest=pin.manifest_digest,
                    new_digest=art.manifest_digest,
                )
            out[ref_of(art)] = pin
    return out


def _stage(ws: Workspace, source: ArtifactSource, art: LockedArtifact, ref: ArtifactRef) -> _Staged:
    shown = source.artifact(art.ref)
    where = source.where
    if not isinstance(shown, dict) or not isinstance(shown.get("files"), list):
        raise BadSource(ref=art.ref, where=where, reason="no artifact description")
    manifest = parse_manifest(shown.get("manifest"), source=f"{art.ref} from {where}")
    got = manifest_digest(manifest).hex
    if got != art.manifest_digest:
        raise ManifestNotPinned(ref=art.ref, where=where, pinned=art.manifest_digest, got=got)
    if publish_ref(manifest) != ref:
        raise BadSource(ref=art.ref, where=where, reason=f"the manifest of {publish_ref(manifest)}")
    sizes = _sizes(shown["files"])
    yanked = shown.get("yanked") is True
    reason = str(shown.get("yank_reason") or "no reason given") if yanked else None
    one = _Staged(ref, manifest, [], [], reason)
    try:
        for f in sorted(manifest.files_list, key=lambda f: f.path):
            one.checked.append((f, _stage_file(ws, source, one, f, sizes.get(f.path))))
    except BaseException:
        for blob in one.pending:
            ws.store.discard(blob)
        raise
    return one


def _sizes(files: list[Any]) -> dict[str, int]:
    return {
        f["path"]: f["size"]
        for f in files
        if isinstance(f, dict) and isinstance(f.get("path"), str) and type(f.get("size")) is int
    }


def _stage_file(
    ws: Workspace, source: ArtifactSource, one: _Staged, f: FileEntry, shown: int | None
) -> int:
    """Stage one file's bytes (unless the store has them); return its size. The download
    stops as soon as it is longer than the manifest's size (or, without one, the size the
    other registry showed): a registry cannot fill the disk."""
    digest = f.digest  # a published manifest names every sha256
    label = f"{one.ref}:{f.path}"
    if ws.store.has(digest):
        return ws.store.verify(digest, label=label, size=f.size).stat().st_size
    cap = f.size if f.size is not None else shown
    if cap is None:
        raise BadSource(ref=str(one.ref), where=source.where, reason=f"no size for {f.path}")
    writer = ws.store.writer()
    try:
        for chunk in source.blob(digest.hex):
            writer.write(chunk)
            if writer.size > cap:
                raise SizeMismatch(path=label, expected=cap, actual=writer.size)
        blob = writer.finish(label=label, expected=digest, size=cap)
    except BaseException:
        writer.abort()
        raise
    one.pending.append(blob)
    return blob.size


def _pinned(one: _Staged, digest: str) -> Pinned:
    return Pinned(
        manifest=manifest_data(one.manifest),
        manifest_digest=digest,
        files=tuple(
            LockedFile(path=f.path, sha256=f.digest.hex, size=size, source=f.source, md5=f.md5)
            for f, size in one.checked
        ),
        requires=requires_of(one.manifest),
        yanked=False,
    )
