"""What a sandboxed worker imports pinbench from: the worker's side of the package, bound
read-only into its sandbox unit by unit, never copied.

A worker imports pinbench from the worker's side alone (``worker.source.SIDE``: ``worker`` and
the units it imports), never from the whole package. An unsandboxed worker gets a copy of its
own (``worker.source.copy_evaluator``: about 760 files with their bytecode), since the code it
may run can write there and must not reach the next worker. A sandboxed worker cannot write:
each unit of the side (a folder, or a module with its bytecode) is bound read-only from the
host's package over an empty entry of the run's folder, which is itself read-only in the
sandbox (``sandbox.wrap``); where a unit's folder holds more than Python sources and their
bytecode, or the package lies where a sandbox may not look, the worker is given a copy.
Otherwise nothing is copied: the copy took 0.18 s of every sandboxed worker's start on this
project's machine, making the entries takes 6 ms (docs/benchmarks.md, section 33). Hard links
to the package's files, tried first, changed their link counts and times, which ``guard``
reads as a change of pinbench's own package by a run's code."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path


def side_binds(folder: Path, hidden: Sequence[Path] = ()) -> list[tuple[Path, Path]] | None:
    """The binds that show the worker's side at ``folder/pinbench``: (the host's file or
    folder, the empty entry made for it under ``folder``), the entries made here. None (nothing
    made) where a unit's folder holds anything but Python sources and their bytecode (a file
    left there, a link) or the package lies under one of ``hidden`` (the home, the blob store,
    the user's home folder, as for the interpreter's folders): a bound folder shows all it
    holds, so such a worker is given a copy of the side's files instead."""
    from pinbench.worker.source import PACKAGE, SIDE

    if any(PACKAGE.resolve().is_relative_to(h.resolve()) for h in hidden) or not all(
        _only_python(PACKAGE / unit) for unit in SIDE if (PACKAGE / unit).is_dir()
    ):
        return None

    top = folder / "pinbench"
    cache = top / "__pycache__"
    cache.mkdir(parents=True)
    tag = sys.implementation.cache_tag
    binds: list[tuple[Path, Path]] = []

    def bind(host: Path, entry: Path) -> None:
        if host.is_dir():
            entry.mkdir()
        else:
            entry.touch()
        binds.append((host, entry))

    modules = ["__init__"]
    for unit in SIDE:
        if (PACKAGE / unit).is_dir():
            bind(PACKAGE / unit, top / unit)
        else:
            modules.append(unit)
    for name in [f"{m}.py" for m in modules] + ["py.typed"]:
        bind(PACKAGE / name, top / name)
    for module in modules:
        compiled = PACKAGE / "__pycache__" / f"{module}.{tag}.pyc"
        if tag is not None and compiled.is_file():
            bind(compiled, cache / compiled.name)
    return binds


def _only_python(unit: Path) -> bool:
    """Whether the folder ``unit`` (not a link) holds only ``.py`` and ``.typed`` files and
    ``__pycache__`` folders of ``.pyc`` files, in folders of the same, none of them a link."""
    if unit.is_symlink():
        return False
    for where, folders, files in os.walk(unit):
        cached = os.path.basename(where) == "__pycache__"
        if any(os.path.islink(os.path.join(where, f)) for f in folders):
            return False
        for name in files:
            path = os.path.join(where, name)
            fits = name.endswith(".pyc") if cached else name.endswith((".py", ".typed"))
            if not fits or os.path.islink(path):
                return False
    return True
