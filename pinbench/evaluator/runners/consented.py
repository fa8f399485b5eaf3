"""Where a run's consented code may write on this machine, and what it may not change.

A run whose model carries processing code, or whose chain has code between stages
(``processing.consent.needs_code``), caches its inputs in a folder of its own,
``cache/inputs/code-<key>``, named by what decides them (the model artifact's manifest and the
chain): nothing but runs of the same code read it. Around its worker the host watches
(``guard.watched``) pinbench's own package, the worker's environment, and the rest of the
inputs cache: a change there fails the run (issue 63: consent is for one run).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.evaluator.runners.guard import Watched
from pinbench.evaluator.source import PACKAGE
from pinbench.processing.consent import needs_code
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.registry.processing_code import Code
from pinbench.workspace import Workspace


def inputs_cache(ws: Workspace, lock: Lockfile) -> Path:
    """The folder a run's preprocessed inputs are cached in (``evaluator.feed.cached_array``)."""
    root = ws.settings.home / "cache" / "inputs"
    if not needs_code(lock):
        return root
    model = lock.artifact(Kind.MODEL)
    chain = lock.body.chain
    key = {
        "model": model.manifest_digest if model is not None else None,
        "chain": msgspec.to_builtins(chain) if chain is not None else None,
    }
    return root / f"code-{Digest.of_bytes(canonical_json(key)).hex[:32]}"


def package_mark(ws: Workspace) -> Path:
    """Where a change a run's code made to pinbench's package is noted: every later run of
    the home is refused while it stays (``guard.check_marked``)."""
    return ws.settings.home / "cache" / "package-changed-by-code.json"


def code_watch(ws: Workspace, lock: Lockfile, environment: Path | None) -> list[Watched]:
    """What the host watches around a worker that runs ``lock``'s code (none for a run without
    code): pinbench's package, ``environment`` (a venv, removed when changed: the next run
    builds it again), and the inputs cache but for the run's own folder."""
    if not needs_code(lock):
        return []
    trees = [Watched("pinbench's own package", PACKAGE, "none", mark=package_mark(ws))]
    if environment is not None:
        trees.append(Watched(f"its environment {environment.name}", environment, "tree"))
    root = ws.settings.home / "cache" / "inputs"
    trees.append(Watched("the inputs cached for other runs", root, "files", inputs_cache(ws, lock)))
    return trees


def code_digests(lock: Lockfile) -> list[str]:
    """The sha256 of every piece of code ``lock`` runs beside its model, from the lockfile
    alone (a file's pinned digest, an inline code's UTF-8): a manifest's ``preprocess`` and
    ``postprocess``, a chain's stage code and join. What a run that carried code records of it
    (``details.code_sha256``), whatever its evaluator said. A ``torch-state-dict`` model's
    ``builder`` is such code too."""
    from pinbench.chains.spec import stage_artifact

    def digest(code: Code, files: dict[str, str]) -> str:
        if code.file is not None:
            return files[code.file]
        assert code.code is not None
        return Digest.of_bytes(code.code.encode("utf-8")).hex

    found = []
    model, art = lock.body.model, lock.artifact(Kind.MODEL)
    if model is not None and art is not None:
        files = {f.path: f.sha256 for f in art.files}
        codes = (model.preprocess, model.postprocess, model.builder)
        found += [digest(c, files) for c in codes if c]
    chain = lock.body.chain
    for stage in chain.stages if chain is not None else []:
        files = {f.path: f.sha256 for f in stage_artifact(lock, stage).files}
        found += [digest(c, files) for c in (stage.code, stage.join) if c]
    return found
