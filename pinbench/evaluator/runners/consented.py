"""Where a run's consented code may write on this machine, and what it may not change.

A run whose model carries processing code, or whose chain has code between stages
(``processing.consent.needs_code``), caches its inputs in a folder of its own,
``cache/inputs/code-<key>``, named by what decides them (the model artifact's manifest and the
chain): nothing but runs of the same code read it. Around its worker the host watches
(``guard.watched``) pinbench's own package, the worker's environment, and the rest of the
inputs cache: a change there fails the run (issue 63: consent is for one run).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from pathlib import Path

import msgspec

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.plain_file import plain_bytes
from pinbench.evaluator.runners.guard import Watched
from pinbench.processing.consent import needs_code
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.registry.processing_code import Code
from pinbench.worker.source import PACKAGE
from pinbench.workspace import Workspace


def inputs_cache(ws: Workspace, lock: Lockfile) -> Path:
    """The folder a run's preprocessed inputs are cached in (``worker.feed.cached_array``):
    one shared by runs of data-only models, one per model for a model that carries code or
    operations of its own (``sandbox.runs_its_own_operations``)."""
    from pinbench.evaluator.runners.sandbox import runs_its_own_operations

    root = ws.settings.home / "cache" / "inputs"
    if not needs_code(lock) and not runs_its_own_operations(lock):
        return root
    return root / f"code-{system_key(lock)}"


def system_key(lock: Lockfile) -> str:
    """The system under test's digest (its model's manifest, its chain), 32 hex digits."""
    model = lock.artifact(Kind.MODEL)
    chain = lock.body.chain
    key = {
        "model": model.manifest_digest if model is not None else None,
        "chain": msgspec.to_builtins(chain) if chain is not None else None,
    }
    return Digest.of_bytes(canonical_json(key)).hex[:32]


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
        files = {f.path: f.sha256 for f in lock.stage_artifact(stage).files}
        found += [digest(c, files) for c in (stage.code, stage.join) if c]
    return found


_ENTRY = re.compile(r"[0-9a-f]{32}-[0-9a-f]{32}\.npy")
"""A cached array's name (``feed.cached_array``): the dataset's and the pipeline's digests."""


def sandboxed_cache(ws: Workspace, lock: Lockfile) -> Path:
    """Where the inputs a sandboxed worker computed are kept: never where a run in pinbench's
    own process reads (``inputs_cache``'s shared folder), and one folder per model, read by
    that model's runs only: ``sandboxed/KEY`` under it for a data-only model (a parser's bug
    the model's bytes reach could make its worker write entries under another model's
    pipeline; shared, they were adopted for every model of that pipeline), a model's own
    folder for code and operations of its own."""
    trusted = inputs_cache(ws, lock)
    root = ws.settings.home / "cache" / "inputs"
    return root / "sandboxed" / system_key(lock) if trusted == root else trusted


def seed_cache(ws: Workspace, lock: Lockfile, run_cache: Path) -> set[str]:
    """A sandboxed worker's cache for one run (``run_cache``, writable inside the sandbox)
    holds copies of the entries kept for this dataset (``sandboxed_cache``): copies, so that
    what the worker writes there reaches no other run, each hashed as it is copied and left
    out unless its bytes are what its sidecar vouches for (the worker then computes it, and
    ``adopt_cache`` keeps its entry in the bad one's place). Returns the names copied."""
    from pinbench.worker.feed import SHA256_SUFFIX
    from pinbench.worker.seal import host_seal

    dataset = lock.body.dataset
    trusted = sandboxed_cache(ws, lock)
    seal = host_seal(ws.store.cache_key)
    if dataset is None or seal is None or not trusted.is_dir():
        return set()
    prefix = dataset.manifest_digest[:32]
    copied = set()
    for entry in trusted.glob(f"{prefix}-*.npy"):
        sidecar = entry.with_name(entry.name + SHA256_SUFFIX)
        if not (_ENTRY.fullmatch(entry.name) and entry.is_file() and sidecar.is_file()):
            continue
        digest = seal.digest_of(entry.name, sidecar.read_text(errors="replace"))
        if digest is not None and _copy_hashed(entry, run_cache / entry.name) == digest:
            side = _fresh(run_cache / sidecar.name)  # the worker checks it too (``feed``)
            if side is not None:
                with os.fdopen(side, "w") as out:
                    out.write(digest)
                copied.add(entry.name)
                continue
        with contextlib.suppress(OSError):
            (run_cache / entry.name).unlink()
    return copied


def _fresh(target: Path) -> int | None:
    """A new file at ``target`` open for writing, whatever was there removed first and never
    followed (a warm evaluator's cache is the same folder job after job: what its worker
    left there, a link to a file of the host's among them, is never written through); none
    where something took the name in between."""
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
        os.unlink(target)
    try:
        return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return None


def _copy_hashed(source: Path, target: Path) -> str | None:
    """``source`` (a plain file, never a link) copied to ``target``: the sha256 of the bytes
    copied, or none where it is not a plain file."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return _hashing_copy(fd, target)
    finally:
        os.close(fd)


def _hashing_copy(fd: int, target: Path) -> str | None:
    """What the plain file open at ``fd`` holds, written to a new file at ``target``
    (``_fresh``) as it is hashed: its sha256, or none (nothing written) where ``fd`` is not a
    plain file or the name could not be taken."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return None
    written = _fresh(target)
    if written is None:
        return None
    hashed = hashlib.sha256()
    with os.fdopen(os.dup(fd), "rb") as source, os.fdopen(written, "wb") as out:
        while chunk := source.read(1 << 20):
            hashed.update(chunk)
            out.write(chunk)
    return hashed.hexdigest()


MAX_SIDECAR = 128
"""An honest sidecar holds one sha256 in hex."""


def adopt_cache(ws: Workspace, lock: Lockfile, run_cache: Path, seeded: set[str]) -> None:
    """After a sandboxed worker ended: the entries it computed for this run's dataset (its
    digest their prefix, not ``seeded``: none kept, or the kept one's bytes or MAC did not
    check, and it is replaced), each a plain file whose bytes hash to its sidecar, kept in
    ``sandboxed_cache`` (read by sandboxed runs only); anything else it left goes with the
    run's folder. Nothing it names is followed or waited on."""
    from pinbench.worker.feed import SHA256_SUFFIX
    from pinbench.worker.seal import host_seal

    dataset = lock.body.dataset
    seal = host_seal(ws.store.cache_key)
    if dataset is None or seal is None or not run_cache.is_dir():
        return
    trusted = sandboxed_cache(ws, lock)
    prefix = dataset.manifest_digest[:32] + "-"
    folder = os.open(run_cache, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        names = sorted(os.listdir(folder))
        for name in names:
            ours = _ENTRY.fullmatch(name) and name.startswith(prefix) and name not in seeded
            if not ours:
                continue
            sidecar = plain_bytes(name + SHA256_SUFFIX, MAX_SIDECAR, dir_fd=folder)
            if sidecar is not None:
                trusted.mkdir(parents=True, exist_ok=True)
                digest = sidecar.decode("ascii", "replace").strip()
                _copy_checked(folder, name, digest, trusted, seal.sidecar(name, digest))
    finally:
        os.close(folder)


def _copy_checked(folder: int, name: str, digest: str, trusted: Path, sidecar: str) -> None:
    """``name`` (in the folder open at ``folder``) copied into ``trusted`` with ``sidecar``
    (its digest and the host's MAC) when it is a plain file whose bytes hash to ``digest``,
    hashed as they are copied; else nothing."""
    from pinbench.worker.feed import SHA256_SUFFIX

    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return
    temp = trusted / f".{name}.part"
    try:
        if _hashing_copy(fd, temp) != digest:
            return
        (trusted / (name + SHA256_SUFFIX)).write_text(sidecar)
        temp.replace(trusted / name)
    finally:
        os.close(fd)
        temp.unlink(missing_ok=True)
