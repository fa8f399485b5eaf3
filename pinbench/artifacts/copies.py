"""The local copies of a blob store on object storage, bounded (decision 210).

The bucket is the truth; the home's ``blobs`` folder keeps copies because runs read files
(decision 151). Those copies are bounded by ``PINBENCH_CACHE_MAX`` (default 20 GiB) and the
least recently used go first:

- **When a copy was last used** is the modification time of an empty file
  ``cache/copies/used/ab/abcdef...``, touched each time the store hands the copy out or makes
  it. Not the copy's own access time, which ``relatime`` mounts update at most daily and
  ``noatime`` ones never, nor a time set on the copy, which would change its ctime and so void
  the verified-state cache's entry for it.
- **A run holds its blobs** (``held``): a file in ``cache/copies/holds`` lists their digests
  and stays locked (``flock``) while the run lives; it is made under the copies' lock, which
  eviction holds while it chooses and removes, so a copy a run verified is there when the run
  reads it. The hold of a process that died is unlocked, and the next eviction removes it.
- **Eviction**: the copies walked, the least recently used removed until their bytes are within
  the limit, leaving those held and those used in the last ``RECENT_S`` seconds (a reader
  between being handed a path and opening it). After copies are added, at a process's first
  addition and then once per sixteenth of the limit added (a walk stats every copy; doing it
  at each addition would make a many-file download quadratic), so the copies exceed the limit
  by at most a sixteenth of it per process writing, plus what is held or recent.
  ``pinbench gc --cache`` evicts at once, down to any size, recent copies included.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.artifacts.digest import Digest
from pinbench.errors import InvalidValue

ENV = "PINBENCH_CACHE_MAX"
DEFAULT_MAX = 20 * 2**30
"""The copies' bound when ``PINBENCH_CACHE_MAX`` is unset: 20 GiB, a few models' weights."""
MAX_BYTES = 2**50
"""The largest bound taken (a PiB: any single disk is smaller)."""
RECENT_S = 60.0
"""A copy used this recently is not evicted automatically."""
WALK_EVERY = 16
"""Automatic eviction walks the copies once per ``limit / WALK_EVERY`` bytes added."""

_HEX = re.compile(r"[0-9a-f]{64}")
_SHARD = re.compile(r"[0-9a-f]{2}")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:([kmgtp])(?:i?b)?|b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}


class InvalidCacheSize(InvalidValue):
    what = ENV


class InvalidKeepSize(InvalidValue):
    what = "--keep"


def cache_size(text: str | None, *, error: type[InvalidValue] = InvalidCacheSize) -> int:
    """``PINBENCH_CACHE_MAX`` (or ``gc --cache --keep``, with its ``error``) in bytes: a number
    with an optional unit K, M, G, T or P (powers of 1024; ``20G``, ``500MiB``, ``0``); unset
    or empty, ``DEFAULT_MAX``."""
    if text is None or not text.strip():
        return DEFAULT_MAX
    found = _SIZE.fullmatch(text.strip())
    if found is None:
        raise error(
            text=text, reason="expected bytes with an optional unit K, M, G or T (e.g. 20G)"
        )
    size = int(float(found.group(1)) * _UNITS[(found.group(2) or "").lower()])
    if size > MAX_BYTES:
        raise error(text=text, reason=f"at most {MAX_BYTES} bytes (1 PiB)")
    return size


@dataclass(frozen=True, slots=True)
class Copy:
    """A copy in ``blobs``: its digest (hex), path, size and when it was last used."""

    digest: str
    path: Path
    size: int
    used: float


@dataclass
class Evicted:
    """What an eviction did: the copies removed and their bytes, those left and theirs,
    ``limit`` the bytes it evicted down to; ``held`` and ``recent``: copies it would have
    removed but for a run holding them or their recent use."""

    limit: int
    removed: int = 0
    removed_bytes: int = 0
    kept: int = 0
    kept_bytes: int = 0
    held: int = 0
    recent: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "removed": self.removed,
            "removed_bytes": self.removed_bytes,
            "kept": self.kept,
            "kept_bytes": self.kept_bytes,
            "held": self.held,
            "recent": self.recent,
        }


class Copies:
    """The copies in ``blobs``, with their bookkeeping in ``root`` (``HOME/cache/copies``)."""

    def __init__(self, blobs: Path, root: Path, max_bytes: int) -> None:
        self.blobs = blobs
        self.max_bytes = max_bytes
        self._used = root / "used"
        self._holds = root / "holds"
        self._lock = root / "copies.lock"
        self._added: int | None = None
        """Bytes added since this process last walked the copies; None before its first."""

    def marker(self, digest: Digest) -> Path:
        return self._used / digest.hex[:2] / digest.hex

    def used(self, digest: Digest) -> None:
        """Record that the copy of ``digest`` was used now. Where the bookkeeping cannot be
        written (a home this user only reads), the copy's own time stands in."""
        marker = self.marker(digest)
        try:
            os.utime(marker)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
        except OSError:
            pass

    def forget(self, digest: Digest) -> None:
        """The copy of ``digest`` was removed: drop its bookkeeping."""
        with contextlib.suppress(OSError):
            self.marker(digest).unlink(missing_ok=True)

    def added(self, size: int) -> Evicted | None:
        """A copy of ``size`` bytes was added: evict down to the limit when it is time (see
        the module's words). A failure to evict is logged, never the caller's failure."""
        if self._added is not None:
            self._added += size
            if self._added < self.max_bytes // WALK_EVERY:
                return None
        self._added = 0
        try:
            return self.evict(self.max_bytes, recent_s=RECENT_S)
        except OSError as exc:
            logging.getLogger(__name__).warning(
                "the local copies in %s were not evicted: %s", self.blobs, exc
            )
            return None

    @contextlib.contextmanager
    def held(self, digests: Iterable[Digest]) -> Iterator[None]:
        """Keep the copies of ``digests`` (made now or later) while the block runs."""
        listed = "".join(f"{hex}\n" for hex in sorted({d.hex for d in digests}))
        self._holds.mkdir(parents=True, exist_ok=True)
        name = self._holds / f"{os.getpid()}-{secrets.token_hex(8)}"
        with self._locked():  # eviction never sees it unlocked or partly written
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                data = memoryview(listed.encode())
                while data:
                    data = data[os.write(fd, data) :]
            except BaseException:
                name.unlink(missing_ok=True)
                os.close(fd)
                raise
        try:
            yield
        finally:
            name.unlink(missing_ok=True)
            os.close(fd)

    def evict(self, limit: int, *, recent_s: float) -> Evicted:
        """Remove the least recently used copies until their bytes are within ``limit``,
        leaving those held and those used less than ``recent_s`` seconds ago."""
        done = Evicted(limit=limit)
        with self._locked():
            held = self._held()
            copies = sorted(self.copies(), key=lambda c: c.used)
            total = sum(c.size for c in copies)
            now = time.time()
            for copy in copies:
                if total <= limit:
                    break
                if copy.digest in held:
                    done.held += 1
                    continue
                if now - copy.used < recent_s:
                    done.recent += 1
                    continue
                copy.path.unlink(missing_ok=True)
                self.forget(Digest(copy.digest))
                total -= copy.size
                done.removed += 1
                done.removed_bytes += copy.size
            done.kept = len(copies) - done.removed
            done.kept_bytes = total
        return done

    def copies(self) -> Iterator[Copy]:
        """Every copy in ``blobs`` (named by its digest in its shard folder)."""
        if not self.blobs.is_dir():
            return
        for shard in os.scandir(self.blobs):
            if not (_SHARD.fullmatch(shard.name) and shard.is_dir(follow_symlinks=False)):
                continue
            for entry in os.scandir(shard.path):
                if not (_HEX.fullmatch(entry.name) and entry.name[:2] == shard.name):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                used = st.st_mtime
                with contextlib.suppress(OSError):
                    used = max(used, self.marker(Digest(entry.name)).stat().st_mtime)
                yield Copy(entry.name, Path(entry.path), st.st_size, used)

    def _held(self) -> set[str]:
        """The digests live holds name; the holds of processes that died are removed."""
        held: set[str] = set()
        if not self._holds.is_dir():
            return held
        for path in self._holds.iterdir():
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    with os.fdopen(os.dup(fd)) as listed:
                        held.update(line.strip() for line in listed if line.strip())
                    continue
                path.unlink(missing_ok=True)  # its process is gone
            finally:
                os.close(fd)
        return held

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._lock.parent.mkdir(parents=True, exist_ok=True)
        with self._lock.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
