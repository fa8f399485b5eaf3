"""The local runner: evaluate in this interpreter, with whatever is installed here.

Its time is limited by the lockfile's ``limits.timeout_s`` like the isolated runners': a
watchdog asks the evaluation to stop (``pinbench.evaluator.stop``), which it does at the next
phase or, inside LoadGen, once LoadGen ends its test (queries are then answered without the
model), and the run is recorded failed with the time limit as its reason."""

from __future__ import annotations

import platform
import sys
from functools import lru_cache
from importlib.metadata import distributions
from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.scratch import scratch_directory
from pinbench.evaluator.job import Evidence, Job, Say, pinned_files
from pinbench.evaluator.measure import measure
from pinbench.evaluator.model_folder import FOLDER, materialise
from pinbench.evaluator.runners.process import RunTimedOut
from pinbench.evaluator.source import evaluator_digest
from pinbench.evaluator.stop import Stop, time_limit
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.evaluator.warm import WarmPool


@lru_cache(maxsize=1)
def installed_digest() -> str:
    """sha256 over this interpreter's installed distributions (``name==version``, sorted): not a
    pin, but it tells two local environments apart. Read once per process (~0.13 s)."""
    names = sorted({f"{d.metadata['Name'].lower()}=={d.version}" for d in distributions()})
    return Digest.of_bytes("\n".join(names).encode()).hex


def store_paths(ws: Workspace, lock: Lockfile, kind: Kind | str) -> dict[str, Path]:
    """Where the pinned files of ``kind`` are in the blob store (none in an operator run).
    Data files are read from there; a model's never are (``model_folder``)."""
    return {f.path: ws.store.path(Digest(f.sha256)) for f in pinned_files(lock, kind)}


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
    from pinbench.chains.spec import stage_artifact

    return {
        stage.name: materialise(
            {f.path: ws.store.path(Digest(f.sha256)) for f in stage_artifact(lock, stage).files},
            root / stage.name,
        )
        for stage in lock.body.chain.stages
    }


def run(
    ws: Workspace,
    lock: Lockfile,
    evidence: Evidence,
    say: Say,
    trace: str,
    *,
    allow_pickle: bool = False,
    allow_code: bool = False,
    stop: Stop | None = None,
    warm: WarmPool | None = None,
) -> None:
    evidence.environment = {
        "runner": "local",
        "digest": installed_digest(),
        "python": platform.python_version(),
        "executable": sys.executable,
        "evaluator": evaluator_digest(),
    }
    stop = stop or Stop()
    limit = lock.body.limits.timeout_s
    with (
        time_limit(stop, limit, RunTimedOut(runner="local", timeout_s=limit)),
        scratch_directory(ws.store.tmp, "run") as scratch,
    ):
        job = Job(
            lock=lock,
            model_paths=model_folder(ws, lock, Path(scratch) / FOLDER),
            stage_paths=stage_folders(ws, lock, Path(scratch) / "stages"),
            data_paths=store_paths(ws, lock, Kind.DATASET),
            validation_paths=store_paths(ws, lock, "validation"),
            scratch=Path(scratch),
            cache=ws.settings.home / "cache" / "inputs",
            trace=trace,
            allow_pickle=allow_pickle,
            allow_code=allow_code,
            stop=stop,
        )
        measure(job, evidence, say)
