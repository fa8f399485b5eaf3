"""A model's own folder: its verified files, each at its artifact path, and nothing else.

A framework resolves what a model names beside it (ONNX external data, a SavedModel's
``variables/``, a Keras archive's assets) from the folder the model's file is in. A blob
store's shard folder holds other artifacts' blobs, so a model is never loaded from there:
every runner hands the evaluator a folder of this shape (``materialise``: hard links on the
store's filesystem, copies elsewhere), and the evaluator checks that what it was handed is
one (``confined``) before anything is loaded, making one in its own scratch otherwise
(``own_folder``). A check of the model's references (``pinbench.registry.onnx_files``) is
then a second wall, not the only one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pinbench.registry.manifest_parts import check_relative_path

FOLDER = "model"
"""The model's folder in a run's scratch."""


def materialise(files: Mapping[str, Path], root: Path) -> dict[str, Path]:
    """Put each file at ``root/<its artifact path>`` (a hard link where the filesystem allows,
    else a read-only copy) in ``root``, which must not exist yet; return where each now is.
    Folders are readable by all (a container's user reads them)."""
    root.mkdir(parents=True)
    root.chmod(0o755)
    placed = {}
    for name, source in sorted(files.items()):
        check_relative_path(name)  # never a file outside root, whatever the caller passed
        target = root / name
        for folder in reversed(target.parents[: len(PurePosixPath(name).parts) - 1]):
            if not folder.exists():
                folder.mkdir()
                folder.chmod(0o755)
        link_or_copy(source, target)
        placed[name] = target
    return placed


def link_or_copy(source: Path, target: Path) -> None:
    """``target`` made a hard link to ``source``, or, on another filesystem (a container's
    bind mount, tmpfs), a read-only copy of it."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
        target.chmod(0o444)


def confined(files: Mapping[str, Path]) -> Path | None:
    """The folder ``files`` form on their own, or None: each is ``ROOT/<its artifact path>``
    for one ``ROOT``, a real folder that holds nothing but them (no other file, no link, no
    folder that leads to none of them)."""
    if not files:
        return None
    roots = set()
    for name, where in files.items():
        check_relative_path(name)
        parts = PurePosixPath(name).parts
        given = Path(os.path.abspath(where)).parts  # as given: a link is not followed
        if len(given) <= len(parts) or given[-len(parts) :] != parts:
            return None
        roots.add(Path(*given[: -len(parts)]))
    if len(roots) != 1:
        return None
    root = roots.pop()
    if root.is_symlink() or not root.is_dir():
        return None
    folders = {str(p) for name in files for p in PurePosixPath(name).parents if str(p) != "."}
    found: set[str] = set()
    pending = [(root, "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return None
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False) and rel in folders:
                pending.append((Path(entry.path), rel + "/"))
            elif entry.is_file(follow_symlinks=False) and rel in files:
                found.add(rel)
            else:
                return None
    return root if found == set(files) else None


def own_folder(files: Mapping[str, Path], scratch: Path) -> dict[str, Path]:
    """``files`` as given when they already form a folder of their own (``confined``), else
    placed in ``scratch/model`` (``materialise``)."""
    if not files or confined(files) is not None:
        return dict(files)
    return materialise(files, scratch / FOLDER)
