"""Publishing a dataset whose files are listed in its file index (decision 118).

Publishing stages the files the manifest lists (``files`` and the index itself, checked
against their sha256 like any other), then reads the index from its staged, verified bytes
and stages every file it lists from beside the manifest (or ``--files``), each checked against
the sha256 and size its line gives, many at once (``artifacts.bulk``). The registry then
records every file as a row, as if the manifest had listed it, so lockfiles pin every file and
``verify`` checks each before a run; the stored manifest is the short one, whose digest (over
the index's sha256) pins them all.

``listing`` is what ``publish.commit_staged`` checks for any indexed dataset, however its
files arrived (staged here, uploaded, adopted): the rows to be written are exactly the files
the manifest lists plus the files its index lists, path for path and sha256 for sha256, and
together they make the dataset the manifest declares (labels found, the sample layout).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import msgspec

from pinbench.artifacts.bulk import BulkStager
from pinbench.artifacts.store import BlobStore, StagedBlob
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.file_index import MAX_INDEX_BYTES, FileIndexRefused, parse_index
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.sourcing import FileProblem


def read_index(manifest: DatasetManifest, where: Callable[[FileEntry], Path]) -> list[FileEntry]:
    """The files ``manifest``'s index lists, read from ``where`` (its verified bytes)."""
    index = manifest.file_index
    assert index is not None
    with where(index).open("rb") as handle:
        data = handle.read(MAX_INDEX_BYTES + 1)
    listed = parse_index(data, index=index.path)
    own = {f.path for f in manifest.files_list}
    for entry in listed:
        if entry.path in own:
            raise FileIndexRefused(
                index=index.path,
                line=None,
                reason=f"lists {entry.path!r}, which the manifest lists too: list each file "
                "once, in the index or in `files`",
            )
    return listed


def stage_listed(
    store: BlobStore, listed: list[FileEntry], *, root: Path
) -> tuple[list[tuple[FileEntry, int]], list[StagedBlob]]:
    """Check and stage each listed file found under ``root`` (its path relative to it, never
    through a link out of it); all or nothing."""
    stager = BulkStager(store)
    checked: list[tuple[FileEntry, int]] = []
    try:
        base = root.resolve()
        folders: dict[str, Path] = {}
        for entry in listed:
            source = _locate(base, entry.path, folders)
            size = stager.stage(source, label=entry.path, expected=entry.digest, size=entry.size)
            checked.append((entry, size))
        blobs = stager.flush()
    except BaseException:
        stager.discard()
        raise
    return checked, blobs


def _locate(base: Path, path: str, folders: dict[str, Path]) -> Path:
    """Where a listed file is: its folder resolved once per folder, the file itself a regular
    file (a link is resolved and must stay inside ``base``)."""
    parent, _, name = path.rpartition("/")
    real = folders.get(parent)
    if real is None:
        real = (base / parent).resolve() if parent else base
        if not real.is_relative_to(base):
            raise FileProblem(
                path=path, reason=f"its folder resolves (through a symlink) outside {base}"
            )
        folders[parent] = real
    source = real / name
    try:
        mode = os.lstat(source).st_mode
    except OSError:
        raise FileProblem(path=path, reason=f"not found at {source}") from None
    if stat.S_ISLNK(mode):
        source = source.resolve()
        if not source.is_relative_to(base):
            raise FileProblem(path=path, reason=f"resolves (through a symlink) outside {base}")
        mode = os.stat(source).st_mode if source.exists() else 0
    if not stat.S_ISREG(mode):
        raise FileProblem(path=path, reason=f"not a regular file at {source}")
    return source


def listing(
    manifest: DatasetManifest,
    checked: list[tuple[FileEntry, int]],
    where: Callable[[FileEntry], Path],
    *,
    listed: list[FileEntry] | None = None,
) -> DatasetManifest:
    """The manifest with every file of the artifact but its index in ``files``, after
    checking that ``checked`` is exactly the manifest's own files plus what its index lists
    and that together they make the declared dataset (``DatasetManifest.check_listing``).
    ``listed``: what ``read_index`` gave for this manifest's staged index, when the caller
    already has it (else the index is read from ``where``)."""
    index = manifest.file_index
    assert index is not None
    if listed is None:
        listed = read_index(manifest, where)
    expected = {f.path: f.sha256 for f in [*manifest.files_list, *listed]}
    got = {entry.path: entry.sha256 for entry, _ in checked}
    if got != expected:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        other = sorted(p for p in set(got) & set(expected) if got[p] != expected[p])
        first = (missing or extra or other)[0]
        reason = (
            f"{len(missing)} listed file(s) not among the files published with it, "
            f"{len(extra)} published file(s) it does not list, {len(other)} with another "
            f"sha256 (first: {first!r}); an indexed dataset is published with all its files "
            "beside its manifest (`pinbench publish`, not uploaded to a server)"
        )
        raise FileIndexRefused(index=index.path, line=None, reason=reason)
    try:
        manifest.check_listing(set(got))
    except ValueError as exc:
        raise FileIndexRefused(index=index.path, line=None, reason=str(exc)) from None
    files = [entry for entry, _ in checked if entry.path != index.path]
    return msgspec.structs.replace(manifest, files=files)  # its checks hold: no listing
