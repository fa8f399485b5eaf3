"""The local runner: evaluate in this interpreter, with whatever is installed here."""

from __future__ import annotations

import platform
import sys
import tempfile
from functools import lru_cache
from importlib.metadata import distributions
from pathlib import Path

from pinbench.artifacts.digest import Digest
from pinbench.evaluator.measure import Evidence, Job, Say, files_of, measure
from pinbench.evaluator.source import evaluator_digest
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.workspace import Workspace


@lru_cache(maxsize=1)
def installed_digest() -> str:
    """sha256 over this interpreter's installed distributions (``name==version``, sorted): not a
    pin, but it tells two local environments apart. Read once per process (~0.13 s)."""
    names = sorted({f"{d.metadata['Name'].lower()}=={d.version}" for d in distributions()})
    return Digest.of_bytes("\n".join(names).encode()).hex


def store_paths(ws: Workspace, lock: Lockfile, kind: Kind) -> dict[str, Path]:
    return {f.path: ws.store.path(Digest(f.sha256)) for f in files_of(lock, kind).files}


def run(ws: Workspace, lock: Lockfile, evidence: Evidence, say: Say, trace: str) -> None:
    evidence.environment = {
        "runner": "local",
        "digest": installed_digest(),
        "python": platform.python_version(),
        "executable": sys.executable,
        "evaluator": evaluator_digest(),
    }
    scratch_root = ws.settings.home / "tmp"
    scratch_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run-", dir=scratch_root) as scratch:
        job = Job(
            lock=lock,
            model_paths=store_paths(ws, lock, Kind.MODEL),
            data_paths=store_paths(ws, lock, Kind.DATASET),
            scratch=Path(scratch),
            cache=ws.settings.home / "cache" / "inputs",
            trace=trace,
        )
        measure(job, evidence, say)
