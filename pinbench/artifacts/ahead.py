"""Hashing a lockfile's blobs while ``pinbench verify`` checks the lockfile against the registry.

The work that must come before any verdict (importing the lockfile and registry code, parsing
the lockfile, re-deriving it from the registry) keeps one core busy; hashing a large pinned
file can keep the other. ``hashes_ahead`` starts, as soon as the digests are read from the
lockfile's JSON, one child process (``python -I -S``, the standard library's hashlib only)
that hashes the blobs this store holds and the verified-state cache does not vouch for. A
thread would not do: it needs the GIL back after every read and every hash, and an importing
main thread holds it for milliseconds at a time (measured: the hash ran at half speed). The
child reports progress and one digest per file; this process compares it with the pin, checks
that the blob's state did not change meanwhile, and records it in the verified-state cache.
``verify_lockfile`` then takes a blob found intact instead of hashing it again, and checks any
other (failed, changed, not reached, the child gone) the usual way, so errors name it as
always.

Nothing here trusts the lockfile: it only asks whether blobs of this store hash to their own
content address, the question ``verify`` asks anyway, and nothing is reported from it until
the lockfile has been checked against the registry. Leaving the ``with`` block kills a child
that is still hashing.

Measured (decision 136): this overlap of the hash with the registry check is what remains of
the start-up work-arounds; the console script no longer starts it before the CLI is imported.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pinbench.artifacts.digest import Digest, DigestError, Progress
from pinbench.artifacts.store import BlobStore
from pinbench.artifacts.verified import FileState

if TYPE_CHECKING:
    import subprocess

Pin = tuple[str, str, int]
"""(label, sha256 hex, size) of one pinned file."""

REPORT_EVERY = 64 * 1024 * 1024

CHILD = f"""
import hashlib, sys
view = memoryview(bytearray(4 << 20))
out = sys.stdout
for path in sys.argv[1:]:
    h, total, pending = hashlib.sha256(), 0, 0
    try:
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(view):
                h.update(view[:n])
                total += n
                pending += n
                if pending >= {REPORT_EVERY}:
                    out.write(f"+ {{pending}}\\n")
                    out.flush()
                    pending = 0
    except OSError:
        out.write("!\\n")
        out.flush()
        continue
    out.write(f"= {{h.hexdigest()}} {{total}} {{pending}}\\n")
    out.flush()
"""


def pins_of(raw: bytes) -> list[Pin]:
    """The files a lockfile's JSON pins, read leniently: whatever is not as expected is left
    out (the real parse, which comes next, reports it)."""
    try:
        data = json.loads(raw)
        out = []
        for art in data["artifacts"]:
            ref = f"{art['kind']}/{art['name']}@{art['version']}"
            for f in art["files"]:
                if isinstance(f["sha256"], str) and isinstance(f["size"], int):
                    out.append((f"{ref}:{f['path']}", f["sha256"], f["size"]))
        return out
    except (ValueError, TypeError, KeyError, RecursionError):
        return []


@dataclass
class _Blob:
    label: str
    digest: Digest
    size: int
    path: Path
    state: FileState
    shown: Progress | None = None
    hashed: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    intact: bool = False


class HashesAhead:
    def __init__(self) -> None:
        self._blobs: dict[tuple[str, int], _Blob] = {}
        self._child: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(
        self,
        store: BlobStore,
        pins: list[Pin],
        *,
        progress: Callable[[str, int], Progress] | None,
        rehash: bool,
    ) -> None:
        if store.remote:  # its files are copies: ``verify`` hashes the bucket's bytes
            return
        queued: list[_Blob] = []
        for label, sha256, size in pins:
            try:
                digest = Digest(sha256)
            except DigestError:
                continue
            path = store.path(digest)
            if (sha256, size) in self._blobs or not path.is_file():
                continue
            state = FileState.of(path.stat())
            blob = _Blob(label, digest, size, path, state)
            self._blobs[(sha256, size)] = blob
            vouched = None if rehash else store.cache.lookup(path.resolve(), state)
            if vouched is not None:
                blob.intact = vouched == digest and state.size == size
                blob.done.set()
                continue
            queued.append(blob)
        if progress is not None:
            self.show(progress)
        self._spawn(store, queued)

    def _spawn(self, store: BlobStore, queued: list[_Blob]) -> None:
        if queued:  # (subprocess imported only when something is left to hash)
            import subprocess

            self._child = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", CHILD, *(str(b.path) for b in queued)],
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            )
            assert self._child.stdout is not None
            self._reader = threading.Thread(
                target=self._read,
                args=(store, self._child.stdout, queued, self._lock),
                name="pinbench-hash-ahead",
                daemon=True,
            )
            self._reader.start()

    def show(self, progress: Callable[[str, int], Progress]) -> None:
        """Progress bars for the blobs still being hashed (from the bytes already done)."""
        with self._lock:
            for blob in self._blobs.values():
                if blob.shown is None and not blob.done.is_set():
                    blob.shown = progress(blob.label, blob.size)
                    blob.shown(blob.hashed)

    def intact(self, sha256: str, size: int) -> bool:
        """True when the blob was hashed ahead (or vouched for by the verified-state cache)
        and matched its digest and size; False: check it the usual way."""
        blob = self._blobs.pop((sha256, size), None)
        if blob is None:
            return False
        blob.done.wait()
        return blob.intact

    def stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.wait()
        if self._reader is not None:
            self._reader.join()
        for blob in self._blobs.values():
            blob.done.set()

    @staticmethod
    def _read(store: BlobStore, lines: IO[str], queued: list[_Blob], lock: threading.Lock) -> None:
        """Take the child's reports in order; a blob not reported stays not intact."""

        def hashed(blob: _Blob, n: int) -> None:
            with lock:
                blob.hashed += n
                if blob.shown is not None:
                    blob.shown(n)

        try:
            for blob in queued:
                while (line := lines.readline()).startswith("+ "):
                    hashed(blob, int(line[2:]))
                if line == "!\n":  # unreadable: left to the usual check
                    blob.done.set()
                    continue
                if not line.startswith("= "):
                    return  # the child is gone
                hexdigest, total, pending = line[2:].split()
                hashed(blob, int(pending))
                unchanged = FileState.of(blob.path.stat()) == blob.state
                if unchanged:
                    store.cache.record(blob.path.resolve(), blob.state, Digest(hexdigest))
                pinned = hexdigest == blob.digest.hex
                blob.intact = unchanged and pinned and int(total) == blob.size
                blob.done.set()
        except (OSError, ValueError):
            return
        finally:
            for blob in queued:
                blob.done.set()


@contextmanager
def hashes_ahead(
    store: BlobStore,
    pins: list[Pin],
    *,
    progress: Callable[[str, int], Progress] | None = None,
    rehash: bool = False,
) -> Iterator[HashesAhead]:
    ahead = HashesAhead()
    try:
        ahead.start(store, pins, progress=progress, rehash=rehash)
        yield ahead
    finally:
        ahead.stop()
