"""The evaluator's own code, as it is shipped into isolated environments.

The venv runner and the framework images run the same pinbench source as the host: the Python
files of the worker's side are copied (never the host's site-packages), and their digest goes
into each run's provenance, so a run names the exact evaluator code that measured it. The
worker's side is ``pinbench.worker`` and the libraries it imports (``LIBRARIES``): the host's
side — the runners, scoring, recording, the database, the keys' code, the CLI and the server —
is never copied into a sandbox or an image (issue 71, item 6; ``tests/test_layers.py`` holds
that the worker imports nothing else).

Each worker process gets a copy of its own (``copy_evaluator``), made when it starts and removed
with its scratch: a worker runs code a user allowed for one run (processing code, a chain's
stages, a model's own operations), and nothing that code writes may be imported by a later
worker (issue 63: a shared staged copy, reused by name, ran a wrapper a model's code had
appended to it in every later run of the home).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from functools import lru_cache
from pathlib import Path

import pinbench

PACKAGE = Path(pinbench.__file__).resolve().parent

LIBRARIES = (
    "artifacts",  # digests, model files read as data (ONNX, safetensors, archives)
    "bounds",
    "chains",  # a chain's stages run and timed apart
    "energy",  # the energy meter read around the timed section
    "errors",
    "libc",  # the C library's write-back calls a copy makes
    "operators",  # an operator benchmark (L0) runs its operators
    "processing",  # a model's own pre/post-processing code, run with consent
    "programs",  # the system's programs, never by PATH (a dvc:// source's git)
    "quiet",
    "registry",  # the lockfile the worker is given, decoded and checked
    "shown",
    "specs",
    "tasks",  # a task's first-answer check and output shapes
    "trace",  # the trace recorder
    "training",  # a training run (L2)
    "transforms",  # a network transformation's validation
    "typed",
)
"""The units of pinbench beside ``worker`` that a worker imports: copied with it."""
SIDE = ("worker", *LIBRARIES)


def evaluator_files() -> list[Path]:
    """The files a worker is given: ``__init__.py``, ``py.typed`` and the ``SIDE`` units'."""
    roots = [PACKAGE / "__init__.py", PACKAGE / "py.typed"]
    for unit in SIDE:
        folder, module = PACKAGE / unit, PACKAGE / f"{unit}.py"
        roots += sorted(folder.rglob("*")) if folder.is_dir() else [module]
    return sorted(
        p
        for p in roots
        if p.is_file() and p.suffix in {".py", ".typed"} and "__pycache__" not in p.parts
    )


@lru_cache(maxsize=1)
def evaluator_digest() -> str:
    """sha256 over the worker's side's files (relative path and content), hex."""
    h = hashlib.sha256()
    for path in evaluator_files():
        rel = path.relative_to(PACKAGE).as_posix()
        h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def copy_evaluator(dest: Path, *, bytecode: bool = True, files: list[Path] | None = None) -> Path:
    """A new copy of the worker's side's files in ``dest/pinbench`` (``dest`` must not exist);
    return ``dest``, the folder to put on ``PYTHONPATH``.

    The host's own bytecode is copied beside each source where the host has it, with the
    source's times, so that a worker that may not write ``.pyc`` files (``PYTHONDONTWRITEBYTECODE``)
    does not compile every module it imports at each start (issue 49: 0.2 s of CPU per start);
    Python checks it against the copied source as it checks the host's. ``bytecode=False``: the
    sources alone (an image build compiles them with the image's own Python). ``files``: these
    files of the package instead (``bench/bench_sandbox.py`` copies the whole package so)."""
    tag = sys.implementation.cache_tag
    dest.mkdir(parents=True)
    made: set[Path] = set()
    for path in evaluator_files() if files is None else files:
        target = dest / "pinbench" / path.relative_to(PACKAGE)
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        shutil.copy2(path, target)
        compiled = path.parent / "__pycache__" / f"{path.stem}.{tag}.pyc"
        if bytecode and tag is not None and path.suffix == ".py" and os.path.isfile(compiled):
            cache = target.parent / "__pycache__"
            if cache not in made:
                cache.mkdir(exist_ok=True)
                made.add(cache)
            shutil.copy2(compiled, cache / compiled.name)
    return dest
