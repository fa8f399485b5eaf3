"""Publishing: validate a manifest, hash and store its files, insert its rows in one transaction.

Versions are immutable: the same manifest again is a no-op; another manifest under a published
version is refused naming both digests. A failed publish leaves no row and no new blob.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.bulk import commit_blobs
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.sources.fetch import ProgressFactory
from pinbench.artifacts.store import StagedBlob
from pinbench.db.errors import Conflict
from pinbench.errors import UserError
from pinbench.registry.dataset_manifest import DatasetManifest, ImageManifest
from pinbench.registry.formats import check_model_files
from pinbench.registry.manifest import (
    FrameworkManifest,
    Manifest,
    ModelManifest,
    manifest_data,
    manifest_digest,
)
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.names import ArtifactRef, Kind, namespace_of
from pinbench.registry.sourcing import Staged, needs_completion, stage_files
from pinbench.registry.supported import check_supported
from pinbench.registry.trained import check_trained_by
from pinbench.registry.versions import parse_version, precedence_key
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.db.plain import Rows
    from pinbench.registry.stage_ahead import StagesAhead


class VersionConflict(UserError):
    def __init__(self, *, ref: ArtifactRef, existing_digest: str, new_digest: str) -> None:
        super().__init__(
            f"{ref} is already published with manifest sha256 {existing_digest}; this manifest "
            f"has sha256 {new_digest}. Published versions never change: publish a new version"
        )
        self.ref = ref
        self.existing_digest = existing_digest
        self.new_digest = new_digest


class SameVersionConflict(UserError):
    """The version equals a published one up to build metadata, which semver ignores: a range
    or an exact pin could not tell them apart (decision 80)."""

    def __init__(self, *, ref: ArtifactRef, existing_version: str) -> None:
        super().__init__(
            f"{ref} equals the published {ref.kind.value}/{ref.name}@{existing_version} up to "
            "build metadata, which semver ignores when comparing versions (no range or pin "
            f"could tell them apart). Published versions never change: publish a new version "
            f"(e.g. {ref.version.bump_patch()})",
        )
        self.ref = ref
        self.existing_version = existing_version


@dataclass(frozen=True, slots=True)
class PublishResult:
    ref: ArtifactRef
    manifest_digest: Digest
    created: bool
    """False when the identical manifest was already published (a no-op)."""
    files: int
    bytes: int
    new_blobs: int


def requires_of(manifest: Manifest) -> list[dict[str, Any]]:
    """The part of a manifest resolution reads: dependencies and platforms."""
    if isinstance(manifest, ModelManifest):
        fw = manifest.framework
        return [{"kind": Kind.FRAMEWORK.value, "name": fw.name, "range": fw.range}]
    if isinstance(manifest, FrameworkManifest):
        out: list[dict[str, Any]] = []
        for env in manifest.environments:
            entry: dict[str, Any] = {"platform": env.platform.key()}
            if env.image is not None:
                entry |= {
                    "kind": Kind.IMAGE.value,
                    "name": env.image.name,
                    "range": env.image.range,
                }
            out.append(entry)
        return out
    if isinstance(manifest, ImageManifest):
        return [{"platform": manifest.platform.key()}]
    return []


def ref_of(manifest: Manifest) -> ArtifactRef:
    kind = Kind(manifest_data(manifest)["kind"])
    return ArtifactRef(kind, manifest.name, parse_version(manifest.version))


def already_published(ws: Workspace, manifest: Manifest) -> PublishResult | None:
    """The no-op result when this exact manifest is published; VersionConflict when another
    manifest holds its version; None when the version is free."""
    check_supported(manifest)
    ref = ref_of(manifest)
    with ws.reads() as rows:
        existing = _existing_digest_in(rows, ref)
        if existing is None:
            _refuse_same_precedence(rows, ref)
            return None
    files = manifest.files_list
    total = sum(f.size or 0 for f in files)
    return _same_or_conflict(ref, existing, manifest_digest(manifest), files, total)


def publish(
    ws: Workspace,
    manifest: Manifest,
    *,
    manifest_dir: Path,
    files_dir: Path | None = None,
    publisher: str | None = None,
    progress: ProgressFactory | None = None,
    say: Callable[[str], None] | None = None,
    ahead: StagesAhead | None = None,
) -> PublishResult:
    """Publish a manifest: its files staged (remote ones fetched and pinned; local ones
    possibly by ``ahead``), then the completed manifest recorded with them; nothing is left
    behind when anything fails."""
    check_supported(manifest)
    complete_first = needs_completion(manifest)
    if not complete_first:
        done = already_published(ws, manifest)
        if done is not None:
            return done
    staged = stage_files(
        ws.store,
        manifest,
        manifest_dir=manifest_dir,
        files_dir=files_dir,
        progress=progress,
        say=say,
        ahead=ahead,
    )
    listed: list[FileEntry] | None = None
    if isinstance(manifest, DatasetManifest) and manifest.file_index is not None:
        staged, listed = _stage_indexed(ws, staged, files_dir or manifest_dir)
    if complete_first:
        try:
            done = already_published(ws, staged.manifest)
        except BaseException:
            _discard(ws, staged.pending)
            raise
        if done is not None:
            _discard(ws, staged.pending)
            return done
    return commit_staged(
        ws, staged.manifest, staged.checked, staged.pending, publisher=publisher, listed=listed
    )


def _stage_indexed(ws: Workspace, staged: Staged, root: Path) -> tuple[Staged, list[FileEntry]]:
    """``staged`` and every file its dataset's index lists (read from the index's staged,
    verified bytes), staged from ``root``; all or nothing (decision 118). Also what the index
    lists, so that ``commit_staged`` does not read and parse it a second time."""
    from pinbench.registry.indexed import read_index, stage_listed

    assert isinstance(staged.manifest, DatasetManifest)
    try:
        listed = read_index(staged.manifest, _where(ws, staged.pending))
        checked, pending = stage_listed(ws.store, listed, root=root)
    except BaseException:
        _discard(ws, staged.pending)
        raise
    return Staged(staged.manifest, staged.checked + checked, staged.pending + pending), listed


def _where(ws: Workspace, pending: list[StagedBlob]) -> Callable[[FileEntry], Path]:
    """Where a file's verified bytes are: staged in ``pending``, or in the store."""
    staged = {b.digest.hex: b.temp for b in pending}

    def where(entry: FileEntry) -> Path:
        return staged.get(entry.digest.hex) or ws.store.local(entry.digest)

    return where


def _discard(ws: Workspace, pending: list[StagedBlob]) -> None:
    for blob in pending:
        ws.store.discard(blob)


def commit_staged(
    ws: Workspace,
    manifest: Manifest,
    checked: list[tuple[FileEntry, int]],
    pending: list[StagedBlob],
    *,
    publisher: str | None,
    adopted: bool = False,
    listed: list[FileEntry] | None = None,
) -> PublishResult:
    """Make staged blobs visible and insert the artifact's rows, under the store's lock; a
    model file not in its declared format (``registry.formats``) is refused first, and so is
    a ``trained_by`` the run recorded here does not back (``registry.trained``; a version
    ``adopted`` from another registry only when it names a run recorded here); a lost race
    (another publish of the same version) leaves no new blob behind; a manifest that cannot
    be recorded leaves no staged file behind. ``listed``: what an indexed dataset's index lists,
    when the caller has already read it from the staged index (else it is read here)."""
    try:
        check_supported(manifest)
        digest = manifest_digest(manifest)
        kind = Kind(manifest_data(manifest)["kind"])
        ref = ref_of(manifest)
        _check_formats(ws, manifest, pending, checked, listed)
    except BaseException:
        _discard(ws, pending)
        raise
    files = [f for f, _ in checked]
    total = sum(f.size or 0 for f in files)
    with ws.store.locked():
        new_blobs = commit_blobs(ws.store, pending)
        try:
            with ws.writes() as rows:
                if _existing_digest_in(rows, ref) is None:
                    _refuse_same_precedence(rows, ref)
                check_trained_by(rows, manifest, checked, adopted=adopted)
                _insert(rows, manifest, kind, digest, publisher, checked)
        except Conflict:
            _drop_unreferenced(ws, new_blobs)
            existing = _existing_digest(ws, ref)
            if existing is None:
                raise
            return _same_or_conflict(ref, existing, digest, files, total)
        except BaseException:
            _drop_unreferenced(ws, new_blobs)
            raise
    size = sum(s for _, s in checked)
    return PublishResult(ref, digest, True, len(files), size, len(new_blobs))


def _check_formats(
    ws: Workspace,
    manifest: Manifest,
    pending: list[StagedBlob],
    checked: list[tuple[FileEntry, int]],
    listed: list[FileEntry] | None = None,
) -> None:
    """Each model file's bytes (staged, or already in the store) in its declared format; a
    dataset's samples and labels as its manifest declares them (an indexed dataset's files
    exactly what its index lists: ``registry.indexed.listing``)."""
    where = _where(ws, pending)
    if isinstance(manifest, ModelManifest):
        check_model_files(manifest, where)
    elif isinstance(manifest, DatasetManifest):
        from pinbench.registry.checks import checks

        if manifest.file_index is not None:
            from pinbench.registry.indexed import listing

            manifest = listing(manifest, checked, where, listed=listed)
        checks().check_dataset_files(manifest, where)


def _same_or_conflict(
    ref: ArtifactRef, existing: str, digest: Digest, files: list[FileEntry], total: int
) -> PublishResult:
    if existing != digest.hex:
        raise VersionConflict(ref=ref, existing_digest=existing, new_digest=digest.hex)
    return PublishResult(ref, digest, False, len(files), total, 0)


INSERT_ARTIFACT = (
    "INSERT INTO artifacts (kind, name, namespace, version, manifest, manifest_digest, requires, "
    "publisher, published_at, yanked) VALUES (:kind, :name, :namespace, :version, :manifest, "
    ":manifest_digest, :requires, :publisher, :published_at, :yanked) RETURNING id"
)
FILES_PER_INSERT = 500
"""Files inserted by one statement (five parameters each: far below either engine's bound)."""


def _insert(
    rows: Rows,
    manifest: Manifest,
    kind: Kind,
    digest: Digest,
    publisher: str | None,
    checked: list[tuple[FileEntry, int]],
) -> None:
    """The artifact's row and its files' rows, with plain SQL (issue 75, item 3): JSON columns
    as their text, which SQLite keeps and PostgreSQL casts."""
    import json

    ((artifact_id,),) = rows(
        INSERT_ARTIFACT,
        {
            "kind": kind.value,
            "name": manifest.name,
            "namespace": namespace_of(manifest.name),
            "version": manifest.version,
            "manifest": json.dumps(manifest_data(manifest)),
            "manifest_digest": digest.hex,
            "requires": json.dumps(requires_of(manifest)),
            "publisher": publisher or getpass.getuser(),
            "published_at": datetime.now(UTC),
            "yanked": False,
        },
    )
    for start in range(0, len(checked), FILES_PER_INSERT):
        values, params = [], {"artifact": artifact_id}
        for i, (f, size) in enumerate(checked[start : start + FILES_PER_INSERT]):
            values.append(f"(:artifact, :p{i}, :s{i}, :n{i}, :o{i})")
            params.update({f"p{i}": f.path, f"s{i}": f.sha256, f"n{i}": size, f"o{i}": f.source})
        rows(
            "INSERT INTO artifact_files (artifact_id, path, sha256, size, source) VALUES "
            + ", ".join(values),
            params,
        )


def _existing_digest(ws: Workspace, ref: ArtifactRef) -> str | None:
    with ws.reads() as rows:
        return _existing_digest_in(rows, ref)


def _existing_digest_in(rows: Rows, ref: ArtifactRef) -> str | None:
    found = rows(
        "SELECT manifest_digest FROM artifacts WHERE kind = :kind AND name = :name "
        "AND version = :version",
        {"kind": ref.kind.value, "name": ref.name, "version": str(ref.version)},
    )
    return str(found[0][0]) if found else None


def _refuse_same_precedence(rows: Rows, ref: ArtifactRef) -> None:
    """Refuse a new version equal to a published one up to build metadata (``1.31.0+venv1``
    beside ``1.31.0``): semver gives them one precedence, so resolution cannot choose."""
    key = precedence_key(ref.version)
    for (version,) in rows(
        "SELECT version FROM artifacts WHERE kind = :kind AND name = :name",
        {"kind": ref.kind.value, "name": ref.name},
    ):
        if version != str(ref.version) and precedence_key(parse_version(str(version))) == key:
            raise SameVersionConflict(ref=ref, existing_version=str(version))


def _drop_unreferenced(ws: Workspace, digests: list[Digest]) -> None:
    from pinbench.db.chunks import chunked

    if not digests:
        return
    used: set[str] = set()
    with ws.reads() as rows:
        for chunk in chunked([d.hex for d in digests]):
            named = {f"d{i}": sha for i, sha in enumerate(chunk)}
            marks = ", ".join(f":{k}" for k in named)
            found = rows(f"SELECT sha256 FROM artifact_files WHERE sha256 IN ({marks})", named)
            used.update(str(sha) for (sha,) in found)
    for d in digests:
        if d.hex not in used:
            ws.store.remove(d)
