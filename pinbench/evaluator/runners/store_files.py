"""Where a run's pinned files are on the host: in the blob store (a dataset's), and linked
into a folder of their own (a model's and a chain's stages', never the store's shard
folders)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.artifacts.digest import Digest
from pinbench.registry.names import Kind
from pinbench.worker.job import pinned_files
from pinbench.worker.model_folder import materialise

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile
    from pinbench.workspace import Workspace


def store_paths(
    ws: Workspace, lock: Lockfile, kind: Kind | str, *, truth: bool = False
) -> dict[str, Path]:
    """Where the pinned files of ``kind`` are in the blob store (none in an operator run);
    ``truth``: the dataset's ground truth too (``job.pinned_files``). Data files are read from
    there; a model's never are (``model_folder``)."""
    return {f.path: ws.store.path(Digest(f.sha256)) for f in pinned_files(lock, kind, truth=truth)}


def model_folder(ws: Workspace, lock: Lockfile, root: Path) -> dict[str, Path]:
    """The model's files at their artifact paths in ``root`` (new; scratch on the store's
    filesystem, so hard links), and nothing else: where the model is loaded from, never the
    blob store's shard folders, which hold other artifacts' blobs."""
    return materialise(store_paths(ws, lock, Kind.MODEL), root)


def stage_folders(ws: Workspace, lock: Lockfile, root: Path) -> dict[str, dict[str, Path]]:
    """A chain's stages' files, each stage's in ``root/<stage>`` as ``model_folder`` places
    the model's; none for a lockfile without a chain."""
    if lock.body.chain is None:
        return {}
    return {
        stage.name: materialise(
            {f.path: ws.store.path(Digest(f.sha256)) for f in lock.stage_artifact(stage).files},
            root / stage.name,
        )
        for stage in lock.body.chain.stages
    }
