"""Staging a manifest's files: local files hashed and copied into the store's temp area, remote
ones fetched there from their source (pinned to a commit, verified against every digest the
manifest gives). The result is the *completed* manifest, the one that is published: each
remote source pinned, each sha256 filled in, a labels file's sha256 named where it was left
out. All or nothing: on any failure every staged file is discarded."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.sources.errors import Md5Mismatch
from pinbench.artifacts.sources.fetch import Fetcher, ProgressFactory
from pinbench.artifacts.sources.uri import parse_source
from pinbench.artifacts.store import BlobStore, ChecksumMismatch, SizeMismatch, StagedBlob
from pinbench.errors import UserError
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.manifest import Manifest, ModelManifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.ports import Output

if TYPE_CHECKING:
    from pinbench.registry.stage_ahead import StagesAhead


class FileProblem(UserError):
    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"file {path!r}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Staged:
    manifest: Manifest
    """Completed: what is published."""
    checked: list[tuple[FileEntry, int]]
    """Each completed file entry and its size."""
    pending: list[StagedBlob]
    """New bytes, staged and not yet visible."""


def needs_completion(manifest: Manifest) -> bool:
    """Whether publishing changes the manifest: remote sources to pin, digests to fill in."""
    if not all(_complete(f) for f in manifest.files_list):
        return True
    return isinstance(manifest, ModelManifest) and any(
        o.labels is not None and o.labels.path is not None and o.labels.sha256 is None
        for o in manifest.outputs
    )


def _complete(entry: FileEntry) -> bool:
    if not entry.remote:
        return True
    assert entry.source is not None
    return entry.sha256 is not None and parse_source(entry.source).pinned


def locate(entry: FileEntry, *, manifest_dir: Path, files_dir: Path | None) -> Path:
    """Where a declared local file's bytes are on disk; refuse any that escape the artifact.

    A ``file:REL`` source is relative to the manifest's directory, the file's ``path`` to
    ``files_dir`` (else the manifest's directory); either must stay inside it, symlinks
    resolved. Refused before anything is opened, so nothing about an outside file is read."""
    if entry.source is not None and entry.source.startswith("file:"):
        rel = entry.source.removeprefix("file:")
        _check_file_source(entry, rel)
        return _inside(entry, manifest_dir.resolve(), rel, f"source {entry.source!r}")
    if entry.source is not None:
        raise FileProblem(
            path=entry.path,
            reason=f"source {entry.source!r}: the schemes understood are file:, https://, "
            "hf:// and dvc://",
        )
    return _inside(entry, (files_dir or manifest_dir).resolve(), entry.path, "the file")


def _check_file_source(entry: FileEntry, rel: str) -> None:
    if not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel:
        raise FileProblem(
            path=entry.path,
            reason=f"source {entry.source!r} must be file:REL, a path relative to the "
            "manifest's directory (not an absolute path)",
        )
    if ".." in rel.split("/"):
        raise FileProblem(
            path=entry.path,
            reason=f"source {entry.source!r} must not contain '..': a file: source stays "
            "inside the manifest's directory",
        )


def _inside(entry: FileEntry, base: Path, rel: str, what: str) -> Path:
    real = (base / rel).resolve()
    if not real.is_relative_to(base):
        raise FileProblem(
            path=entry.path,
            reason=f"{what} resolves (through a symlink) outside the artifact directory {base}",
        )
    return real


def stage_files(
    store: BlobStore,
    manifest: Manifest,
    *,
    manifest_dir: Path,
    files_dir: Path | None,
    progress: ProgressFactory | None = None,
    say: Callable[[str], None] | None = None,
    ahead: StagesAhead | None = None,
) -> Staged:
    """Check every file and stage its new bytes in the store; all or nothing.

    Bytes already in the store are only hashed (through the verified-state cache); new bytes
    are hashed and copied in one pass into the store's temp area, or taken from ``ahead``
    where it staged them already. The caller commits them.
    """
    files = manifest.files_list
    local = {
        f.path: locate(f, manifest_dir=manifest_dir, files_dir=files_dir)
        for f in files
        if not f.remote
    }
    for f in files:
        if f.path in local and not local[f.path].is_file():
            raise FileProblem(path=f.path, reason=f"not found at {local[f.path]}")
    checked: list[tuple[FileEntry, int]] = []
    pending: list[StagedBlob] = []
    try:
        with Fetcher(store, progress=progress, say=say) as fetcher:
            for f in files:
                if f.path in local:
                    entry, size, blob = _stage_local(store, f, local[f.path], progress, ahead)
                else:
                    entry, size, blob = _fetch_remote(fetcher, f)
                if blob is not None:
                    pending.append(blob)
                checked.append((entry, size))
        completed = complete(manifest, [entry for entry, _ in checked])
    except BaseException:
        for blob in pending:
            store.discard(blob)
        raise
    return Staged(completed, checked, pending)


def _stage_local(
    store: BlobStore,
    f: FileEntry,
    src: Path,
    progress: ProgressFactory | None,
    ahead: StagesAhead | None,
) -> tuple[FileEntry, int, StagedBlob | None]:
    cb = progress(f.path, src.stat().st_size) if progress else None
    blob = None
    if store.has(f.digest):
        actual, size, _ = store.cache.digest(src, progress=cb)
        if actual != f.digest:
            raise ChecksumMismatch(path=f.path, expected=f.digest, actual=actual)
    else:
        blob = ahead.take(src, f.digest, cb) if ahead is not None else None
        if blob is None:
            blob = store.stage(src, label=f.path, expected=f.digest, progress=cb)
        size = blob.size
    if f.size is not None and f.size != size:
        if blob is not None:
            store.discard(blob)
        raise SizeMismatch(path=f.path, expected=f.size, actual=size)
    if f.md5 is not None:
        try:
            check_md5(src, label=f.path, expected=f.md5)
        except BaseException:
            if blob is not None:
                store.discard(blob)
            raise
    return f, size, blob


def check_md5(path: Path, *, label: str, expected: str) -> None:
    """A declared (legacy) md5 holds for a local file's bytes, else ``Md5Mismatch``: the
    sha256 is what pins the bytes, and a declared md5 is checked, never ignored."""
    with path.open("rb") as handle:
        actual = hashlib.file_digest(handle, lambda: hashlib.md5(usedforsecurity=False))
    if actual.hexdigest() != expected:
        raise Md5Mismatch(
            path=label, expected=expected, actual=actual.hexdigest(), declared_by="the manifest"
        )


def _fetch_remote(fetcher: Fetcher, f: FileEntry) -> tuple[FileEntry, int, StagedBlob | None]:
    assert f.source is not None
    got = fetcher.fetch(
        f.source,
        label=f.path,
        sha256=Digest(f.sha256) if f.sha256 is not None else None,
        md5=f.md5,
        size=f.size,
    )
    entry = msgspec.structs.replace(f, sha256=got.digest.hex, source=got.pinned, md5=got.md5)
    return entry, got.size, got.staged


def complete(manifest: Manifest, files: list[FileEntry]) -> Manifest:
    """The manifest with these (completed) file entries and its labels' sha256s named."""
    if not manifest.files_list:
        return manifest
    if isinstance(manifest, DatasetManifest) and manifest.file_index is not None:
        *listed, index = files  # ``files_list`` ends with the file index
        done: Manifest = msgspec.structs.replace(manifest, files=listed, file_index=index)
    else:
        done = msgspec.structs.replace(manifest, files=files)
    if isinstance(done, ModelManifest):
        by_path = {f.path: f for f in files}
        outputs = [_labelled(o, by_path) for o in done.outputs]
        done = msgspec.structs.replace(done, outputs=outputs)
    return done


def _labelled(output: Output, files: dict[str, FileEntry]) -> Output:
    if output.labels is None or output.labels.path is None:  # none, or in the model's metadata
        return output
    actual = files[output.labels.path].sha256
    if output.labels.sha256 is None:
        labels = msgspec.structs.replace(output.labels, sha256=actual)
        return msgspec.structs.replace(output, labels=labels)
    if output.labels.sha256 != actual:
        raise FileProblem(
            path=output.labels.path,
            reason=f"the output's labels name sha256 {output.labels.sha256}, "
            f"the file's entry {actual}",
        )
    return output
