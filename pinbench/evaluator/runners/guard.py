"""What a worker that ran code a user allowed may not change: the trees later runs read.

Processing code and a chain's code run in a worker with the rights of whoever started it (the
local and venv runners; the docker runner confines them to a container). Consent is for one
run (invariant 15), so the host watches what a later run would read without checking it again:
pinbench's own package (the scorer, the recorder, the evaluator every worker copies), the
worker's environment, and the inputs cached for other runs. It notes each file's state (size,
mtime, ctime, inode: ``artifacts.verified.FileState``; no user call sets ctime) before the
worker starts and compares after it ends; a file made, changed or removed fails the run naming
it, and what was changed is removed so that the next run rebuilds it (an environment, cached
inputs) or the user sees it (the package is left for them: pinbench does not repair its own
installation).

It finds changes, it does not prevent them: code set on rewriting its user's files (the
database, a shell profile) can; only the docker runner confines code (docs/security.md).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pinbench.artifacts.verified import FileState
from pinbench.errors import UserError

SHOWN = 5
"""How many changed paths an error names (then how many more)."""


def _shown(paths: list[str]) -> str:
    """The first ``SHOWN`` paths, then how many more."""
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


class CodeChangedFiles(UserError):
    """A worker that ran a user's code changed files that later runs read."""

    def __init__(self, *, what: str, paths: list[str], action: str) -> None:
        shown = _shown(paths)
        super().__init__(
            f"the run's code changed {what}, which later runs read: {shown}. {action} "
            "Code you allowed may change nothing outside its run; run code you do not trust "
            "with --runner docker"
        )
        self.what = what
        self.paths = paths
        self.action = action


@dataclass(frozen=True, slots=True)
class Watched:
    """A tree the worker may not change. ``own``: a folder inside it that is the run's own (its
    cached inputs), left out. ``remove``: what to remove when it changed: ``"tree"`` (an
    environment, rebuilt by the next run), ``"files"`` (the changed files) or ``"none"``."""

    what: str
    root: Path
    remove: str
    own: Path | None = None
    mark: Path | None = None
    """Where a change that is not removed (``remove="none"``) is noted, so that later runs are
    refused while it stays (``check_marked``)."""


State = dict[str, tuple[int, FileState]]


def snapshot(root: Path, own: Path | None = None) -> State:
    """Every entry under ``root`` (but ``own``) by its relative path: its mode and state."""
    found: State = {}
    skip = str(own) if own is not None else None
    for top, dirs, files in os.walk(root):
        if skip is not None:
            dirs[:] = [d for d in dirs if os.path.join(top, d) != skip]
        for name in (*dirs, *files):
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            found[os.path.relpath(path, root)] = (st.st_mode, FileState.of(st))
    return found


def changed(before: State, after: State) -> list[str]:
    """Paths made, removed or changed between two snapshots, sorted. A folder whose entries
    changed changes its own times: it is named only when nothing inside it is."""
    paths = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    return [p for p in paths if not any(q.startswith(p + os.sep) for q in paths)]


@contextmanager
def watched(trees: list[Watched]) -> Iterator[None]:
    """Fail (``CodeChangedFiles``) when the body changed any of ``trees``; the first changed
    tree is named, and every changed one is cleaned as its ``remove`` says."""
    before = [snapshot(t.root, t.own) if t.root.exists() else {} for t in trees]
    try:
        yield
    finally:
        errors = []
        for tree, seen in zip(trees, before, strict=True):
            now = snapshot(tree.root, tree.own) if tree.root.exists() else {}
            paths = changed(seen, now)
            if paths:
                if tree.mark is not None:
                    _note(tree, {p: now.get(p) for p in paths})
                errors.append(
                    CodeChangedFiles(what=tree.what, paths=paths, action=_clean(tree, paths))
                )
        if errors:
            raise errors[0]


def _clean(tree: Watched, paths: list[str]) -> str:
    if tree.root.is_symlink():  # a root swapped for a link: nothing is removed through it
        return f"{tree.root} is now a link: remove it, and what it points to, yourself."
    if tree.remove == "tree":
        shutil.rmtree(tree.root, ignore_errors=True)
        return f"{tree.root} was removed; the next run builds it again."
    if tree.remove == "files":
        for rel in paths:
            path = tree.root / rel
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        return "They were removed; the next run computes them again."
    return f"Reinstall {tree.root.name} before you trust another run."


class ChangedByCode(UserError):
    """A run is refused: an earlier run's code changed files that stay as it left them."""

    def __init__(self, *, what: str, paths: list[str]) -> None:
        shown = _shown(paths)
        super().__init__(
            f"an earlier run's code changed {what}: {shown}, still as it left them. Reinstall "
            "pinbench (pip install --force-reinstall pinbench, or your checkout's files "
            "restored) before another run"
        )
        self.what = what
        self.paths = paths


def _note(tree: Watched, states: dict[str, tuple[int, FileState] | None]) -> None:
    assert tree.mark is not None
    entry = {
        "what": tree.what,
        "root": str(tree.root),
        "paths": {
            p: None if st is None else [st[0], *dataclasses.astuple(st[1])]
            for p, st in states.items()
        },
    }
    tree.mark.parent.mkdir(parents=True, exist_ok=True)
    tree.mark.write_text(json.dumps(entry))


def check_marked(mark: Path) -> None:
    """Refuse (``ChangedByCode``) while a change an earlier run's code made (``Watched.mark``)
    stays as it was left: the same file in the same state, or still gone; once every one has
    changed since (reinstalled, restored), the mark goes."""
    try:
        entry = json.loads(mark.read_text())
        root, states = Path(entry["root"]), dict(entry["paths"])
    except FileNotFoundError:
        return
    except (OSError, ValueError, KeyError, TypeError):
        mark.unlink(missing_ok=True)  # not the host's writing: nothing to hold a run to
        return
    staying = []
    for rel, left in states.items():
        try:
            st = os.lstat(root / rel)
            now = [st.st_mode, *dataclasses.astuple(FileState.of(st))]
        except FileNotFoundError:
            now = None
        if now == left:
            staying.append(rel)
    if staying:
        raise ChangedByCode(what=str(entry.get("what", root)), paths=sorted(staying))
    mark.unlink(missing_ok=True)
