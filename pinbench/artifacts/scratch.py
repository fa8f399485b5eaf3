"""Scratch in ``HOME/tmp`` (staged blobs, uploads, fetches, run folders), each entry named by
the process that owns it, and reclaiming what dead processes left there.

A process that makes scratch first takes an *owner lock*: ``HOME/owners/OWNER.lock`` (beside
``tmp``, which thus holds nothing but scratch),
held with ``flock`` for the rest of its life. The file is created and locked under a
temporary name and only then renamed, so a lock file with its final name is held by its
live process or by none; the kernel drops the lock when the process dies, however it dies
(``kill -9`` included). Every scratch entry carries its owner: ``stage-OWNER-xxxxxxxx``.

``reclaim`` removes an entry only after taking its owner's lock itself (non-blocking): a
live owner, on this host or any other sharing the home, holds it and its scratch is left
alone. Nothing depends on process ids, so a reused pid never makes a dead owner look alive
or a live one dead. Entries named before owners existed (``stage-xxxxxxxx``) are removed
once untouched for ``LEGACY_MIN_AGE_S``; names it does not know are never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("stage", "upload", "bytes", "fetch", "run", "warm")
"""What scratch is made for: staged blobs (publish), uploads (serve), small blobs, fetched
sources, run folders, warm evaluators' job folders. (A resumable download's
``download-*.part`` is kept on purpose.)"""
OWNERS = "owners"
"""The folder of owner locks, beside the scratch folder."""
LEGACY_MIN_AGE_S = 24 * 3600
_OWNED = re.compile(rf"^(?:{'|'.join(KINDS)})-([0-9a-f]{{16}})-")
_LEGACY = re.compile(rf"^(?:{'|'.join(KINDS)})-(?![0-9a-f]{{16}}-)")


class _Owners:
    """This process's owner lock per scratch folder (re-taken in a forked child)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Path, tuple[int, str, int]] = {}
        """folder -> (pid that took it, owner id, open descriptor holding the flock)."""

    def owner(self, tmp: Path) -> str:
        key = tmp.absolute()
        with self._lock:
            held = self._held.get(key)
            if held is not None and held[0] == os.getpid():
                if (owners_of(key) / f"{held[1]}.lock").exists():
                    return held[1]
                os.close(held[2])  # the folder was removed under us: take a new owner
            owner, fd = _take(owners_of(key))
            self._held[key] = (os.getpid(), owner, fd)
            return owner


def owners_of(tmp: Path) -> Path:
    """Where the owner locks of scratch folder ``tmp`` are."""
    return tmp.parent / OWNERS


def _take(owners: Path) -> tuple[str, int]:
    """A new owner id and the descriptor holding its lock (never closed: the process's life)."""
    import secrets
    import socket

    owners.mkdir(parents=True, exist_ok=True)
    owner = secrets.token_hex(8)
    fresh = owners / f".new-{owner}"
    fd = os.open(fresh, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        os.replace(fresh, owners / f"{owner}.lock")
    except BaseException:  # a full disk (issue 72, item 2): neither the file nor its lock kept
        os.close(fd)
        fresh.unlink(missing_ok=True)
        raise
    return owner, fd


_OWNERS = _Owners()


def owner_of(tmp: Path) -> str:
    """This process's owner id in scratch folder ``tmp`` (taking its lock the first time)."""
    return _OWNERS.owner(tmp)


def scratch_file(tmp: Path, kind: str) -> tuple[int, Path]:
    """A new file ``KIND-OWNER-xxxxxxxx`` in ``tmp``, opened for writing: (descriptor, path)."""
    import tempfile  # (with shutil and random) when a command first writes scratch

    tmp.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=tmp, prefix=f"{_kind(kind)}-{owner_of(tmp)}-")
    return fd, Path(name)


@contextlib.contextmanager
def scratch_directory(tmp: Path, kind: str) -> Iterator[Path]:
    """A new folder ``KIND-OWNER-xxxxxxxx`` in ``tmp``, removed on the way out."""
    import tempfile

    tmp.mkdir(parents=True, exist_ok=True)
    prefix = f"{_kind(kind)}-{owner_of(tmp)}-"
    made = Path(tempfile.mkdtemp(prefix=prefix, dir=tmp))
    try:
        yield made
    finally:
        with contextlib.suppress(FileNotFoundError):
            remove_tree(made)


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def remove_tree(path: Path) -> None:
    """``path`` and everything below it, however deep: a run's sandbox writes its answers
    folder as it likes, and 3,000 nested folders made ``shutil.rmtree`` (recursive, by paths
    longer than the system allows) raise ``RecursionError`` and leave it all (issue 71's
    review). Each pass moves the folders one level down up into ``path`` (by descriptors:
    no long paths, a bounded number open) and removes what it emptied; links are removed,
    never followed."""
    top = os.open(path, _DIRECTORY)
    moved = 0
    try:
        while True:
            with os.scandir(top) as entries:
                listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            folders = [name for name, folder in listed if folder]
            for name, folder in listed:
                if not folder:
                    os.unlink(name, dir_fd=top)
            if not folders:
                break
            for name in folders:
                inner = os.open(name, _DIRECTORY, dir_fd=top)
                try:
                    with os.scandir(inner) as entries:
                        below = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                    for child, folder in below:
                        if folder:
                            moved += 1
                            flat = f".flat-{moved}"
                            os.rename(child, flat, src_dir_fd=inner, dst_dir_fd=top)
                        else:
                            os.unlink(child, dir_fd=inner)
                finally:
                    os.close(inner)
                os.rmdir(name, dir_fd=top)
    finally:
        os.close(top)
    os.rmdir(path)


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"scratch kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return kind


@dataclass
class Reclaimed:
    """What ``reclaim`` removed (name and bytes of each entry) and what it left to live owners."""

    removed: list[tuple[str, int]] = field(default_factory=list)
    kept: int = 0
    """Entries whose owner is alive."""

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.removed)

    def summary(self) -> str:
        entries = "entry" if len(self.removed) == 1 else "entries"
        return (
            f"reclaimed {len(self.removed)} scratch {entries}, {self.bytes:,} bytes; "
            f"left {self.kept} of live processes"
        )


def reclaim(tmp: Path, *, legacy_min_age_s: float = LEGACY_MIN_AGE_S) -> Reclaimed:
    """Remove the scratch in ``tmp`` whose owner is dead (and its owner lock); never a live
    owner's, whatever process or host it runs on."""
    done = Reclaimed()
    if not tmp.is_dir():
        return done
    owners = owners_of(tmp)
    by_owner: dict[str, list[Path]] = {}
    for entry in sorted(tmp.iterdir()):
        owned = _OWNED.match(entry.name)
        if owned is not None:
            by_owner.setdefault(owned.group(1), []).append(entry)
        elif _LEGACY.match(entry.name) and _idle_for(entry) >= legacy_min_age_s:
            _remove(entry, done)
    if owners.is_dir():
        for lock in owners.glob("*.lock"):
            by_owner.setdefault(lock.stem, [])
        for fresh in owners.glob(".new-*"):  # its process died before renaming it
            with _if_dead(fresh):
                pass
    for owner, entries in sorted(by_owner.items()):
        with _if_dead(owners / f"{owner}.lock") as dead:
            if not dead:
                done.kept += len(entries)
                continue
            for entry in entries:
                _remove(entry, done)
    return done


def reclaim_each(folders: Iterable[Path]) -> Reclaimed:
    """``reclaim`` in each of ``folders`` (a home's ``tmp`` and its blob store's staging
    folder, ``BlobStore.scratch_folders``), what each removed and kept added up."""
    done = Reclaimed()
    for folder in folders:
        part = reclaim(folder)
        done.removed += part.removed
        done.kept += part.kept
    return done


def reclaim_owner(tmp: Path, owner: str) -> Reclaimed:
    """``reclaim`` for one owner (a child process this one started and saw end): its scratch
    and its lock, if it is dead; nothing of any other process is looked at."""
    done = Reclaimed()
    if not re.fullmatch(r"[0-9a-f]{16}", owner):
        return done
    with _if_dead(owners_of(tmp) / f"{owner}.lock") as dead:
        if not dead:
            return done
        for kind in KINDS:
            for entry in tmp.glob(f"{kind}-{owner}-*"):
                _remove(entry, done)
    return done


def owner_alive(tmp: Path, owner: str) -> bool:
    """Whether the process that owns ``owner`` in scratch folder ``tmp`` lives (holds its
    lock), on this host or another sharing the home; its lock is left as it is."""
    if not re.fullmatch(r"[0-9a-f]{16}", owner):
        return False
    try:
        fd = os.open(owners_of(tmp) / f"{owner}.lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # the lock, if taken, goes with the descriptor
    return False


@contextlib.contextmanager
def _if_dead(lock: Path) -> Iterator[bool]:
    """True (holding the dead owner's lock, removed on the way out) when no process holds
    ``lock``; False when its owner is alive."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        yield True  # its lock is gone: reclaimed before, or never renamed into place
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
        lock.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _idle_for(entry: Path) -> float:
    try:
        return time.time() - entry.lstat().st_mtime
    except FileNotFoundError:
        return 0.0


def _remove(entry: Path, done: Reclaimed) -> None:
    size = _size(entry)
    try:
        if entry.is_dir() and not entry.is_symlink():
            remove_tree(entry)
        else:
            entry.unlink()
    except FileNotFoundError:
        return
    done.removed.append((entry.name, size))


def _size(entry: Path) -> int:
    try:
        if not entry.is_dir() or entry.is_symlink():
            return entry.lstat().st_size
        total = 0
        for root, _, files in os.walk(entry):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, name)).st_size
        return total
    except (OSError, RecursionError):  # os.walk recurses: a tree too deep for it counts 0
        return 0
