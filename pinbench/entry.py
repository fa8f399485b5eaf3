"""The ``pinbench`` console script: work that can start before the CLI is imported, the
command, and a quick exit.

Importing the CLI (Typer, and the pydantic it loads to convert arguments) takes 0.15-0.2 s.
``pinbench verify LOCKFILE`` spends that time hashing: the lockfile's pinned blobs are handed
to a hashing child process (``pinbench.artifacts.ahead``) before anything else is imported,
and the ``verify`` command takes them over (``early_hashes``). Only the plain forms
``verify LOCKFILE`` and ``verify --rehash LOCKFILE`` start early; any other argument list is
left to the command as it is. Likewise ``publish MANIFEST`` (and no other form) stages the
manifest's large local files meanwhile (``early_stages``), and ``digest FILE...`` (no option)
hashes its large files (``early_digests``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.artifacts.ahead import HashesAhead
    from pinbench.registry.stage_ahead import StagesAhead

_early: dict[tuple[Path, bool], tuple[bytes, HashesAhead]] = {}
_early_stages: dict[Path, StagesAhead] = {}
_early_files: dict[tuple[Path, ...], HashesAhead] = {}


def early_hashes(lockfile: Path, *, rehash: bool) -> tuple[bytes, HashesAhead] | None:
    """The lockfile's bytes as read at start-up and the hashing started on them, if this
    process started early for exactly this lockfile and ``rehash``; taken once."""
    return _early.pop((lockfile, rehash), None)


def early_stages(manifest: Path) -> StagesAhead | None:
    """The staging started at start-up for exactly this manifest path, if any; taken once."""
    return _early_stages.pop(manifest, None)


def early_digests(files: Sequence[Path]) -> HashesAhead | None:
    """The hashing started at start-up for exactly these ``digest`` arguments; taken once."""
    return _early_files.pop(tuple(files), None)


@contextmanager
def started_early(argv: Sequence[str]) -> Iterator[None]:
    args = list(argv)
    if len(args) >= 2 and args[0] == "digest" and not any(a.startswith("-") for a in args):
        with _digest_early([Path(a) for a in args[1:]]):
            yield
        return
    if len(args) == 2 and args[0] == "publish" and not args[1].startswith("-"):
        with _publish_early(Path(args[1])):
            yield
        return
    rehash = "--rehash" in args
    rest = [a for a in args if a != "--rehash"]
    if (
        len(rest) != 2
        or rest[0] != "verify"
        or rest[1].startswith("-")
        or args.count("--rehash") > 1
    ):
        yield
        return
    path = Path(rest[1])
    try:
        raw = path.read_bytes()
    except OSError:
        yield  # the command reports it
        return
    from pinbench.artifacts.ahead import hashes_ahead, pins_of
    from pinbench.artifacts.store import BlobStore
    from pinbench.config import Settings

    store = BlobStore(Settings.from_env().home)
    try:
        with hashes_ahead(store, pins_of(raw), rehash=rehash) as ahead:
            _early[(path, rehash)] = (raw, ahead)
            yield
    finally:
        _early.clear()
        store.cache.close()


@contextmanager
def _digest_early(files: list[Path]) -> Iterator[None]:
    """``digest FILE...``: its large files are hashed while the CLI is imported."""
    from pinbench.artifacts.ahead import files_ahead
    from pinbench.artifacts.store import BlobStore
    from pinbench.config import Settings

    store = BlobStore(Settings.from_env().home)
    try:
        with files_ahead(store, files) as ahead:
            _early_files[tuple(files)] = ahead
            yield
    finally:
        _early_files.clear()
        store.cache.close()


@contextmanager
def _publish_early(manifest: Path) -> Iterator[None]:
    """``publish MANIFEST`` on this workspace (no PINBENCH_URL): its large local files are
    staged while the CLI is imported (``pinbench.registry.stage_ahead``)."""
    import os

    if os.environ.get("PINBENCH_URL"):
        yield
        return
    from pinbench.registry.stage_ahead import planned, stages_ahead

    files = planned(manifest)
    if not files:
        yield
        return
    from pinbench.artifacts.store import BlobStore
    from pinbench.config import Settings

    store = BlobStore(Settings.from_env().home)
    try:
        with stages_ahead(store, files) as ahead:
            _early_stages[manifest] = ahead
            yield
    finally:
        _early_stages.clear()
        store.cache.close()


def entrypoint() -> None:
    """Run the command, then leave without tearing down every imported module, which Python's
    normal shutdown does and which costs 0.07 s of a command that loaded SQLAlchemy and
    0.16-0.18 s of one that also loaded Rich and Typer's pydantic (measured). Everything else
    that shutdown does is done first: a command that left a non-daemon thread running takes
    the normal exit; atexit handlers run (temporary directories, logging); cyclic garbage is
    collected, so any file object still open is closed and flushed; stdout and stderr are
    flushed (a failure there exits 120, as Python does)."""
    import atexit
    import gc
    import os
    import threading

    with started_early(sys.argv[1:]):
        from pinbench.cli import main

        code = main()
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if any(t.is_alive() and not t.daemon for t in others):
        sys.exit(code)
    atexit._run_exitfuncs()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    os._exit(code)
