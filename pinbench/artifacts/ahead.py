"""Hashing a lockfile's blobs while the rest of ``pinbench verify`` starts up.

Hashing a large pinned file keeps one core busy with the GIL released (hashlib), while the
work that must come before any verdict (importing the lockfile and registry code, parsing the
lockfile, re-deriving it from the registry) keeps the other busy. ``HashesAhead`` checks the
blobs this store already holds, in threads, as soon as their digests are read from the
lockfile's JSON; ``verify_lockfile`` then takes a blob that was found intact instead of
hashing it again, and checks any other (failed, missing, not reached) the usual way.

Nothing here trusts the lockfile: it only asks whether blobs of this store hash to their own
content address, the question ``verify`` asks anyway. Nothing is reported from it until the
lockfile has been checked against the registry, and leaving the ``with`` block cancels what is
left at the next chunk.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from pinbench.artifacts.digest import Digest, DigestError, Progress
from pinbench.artifacts.store import BlobStore
from pinbench.errors import PinbenchError

WORKERS = 2


class Cancelled(Exception):
    """Raised inside a worker's hashing loop when the verification ended without it."""


Pin = tuple[str, str, int]
"""(label, sha256 hex, size) of one pinned file."""


def pins_of(raw: bytes) -> list[Pin]:
    """The files a lockfile's JSON pins, read leniently: whatever is not as expected is left
    out (the real parse, which comes next, reports it)."""
    try:
        data = json.loads(raw)
        artifacts = data["artifacts"]
        out = []
        for art in artifacts:
            ref = f"{art['kind']}/{art['name']}@{art['version']}"
            for f in art["files"]:
                if isinstance(f["sha256"], str) and isinstance(f["size"], int):
                    out.append((f"{ref}:{f['path']}", f["sha256"], f["size"]))
        return out
    except (ValueError, TypeError, KeyError, RecursionError):
        return []


class HashesAhead:
    def __init__(self, pool: ThreadPoolExecutor, cancelled: threading.Event) -> None:
        self._pool = pool
        self.cancelled = cancelled
        """Set when the verification is over: work still under way stops."""
        self._futures: dict[tuple[str, int], Future[bool]] = {}

    def start(
        self,
        store: BlobStore,
        pins: list[Pin],
        *,
        progress: Callable[[str, int], Progress] | None,
        rehash: bool,
    ) -> None:
        for label, sha256, size in pins:
            try:
                digest = Digest(sha256)
            except DigestError:
                continue
            if (sha256, size) in self._futures or not store.has(digest):
                continue
            shown = progress(label, size) if progress is not None else None  # bars: this thread
            self._futures[(sha256, size)] = self._pool.submit(
                self._verify, store, digest, size, self._hook(shown), rehash
            )

    def intact(self, sha256: str, size: int) -> bool:
        """True when the blob was hashed ahead (or vouched for by the verified-state cache)
        and matched its digest and size; False: check it the usual way."""
        future = self._futures.pop((sha256, size), None)
        return future is not None and future.result()

    def _hook(self, shown: Progress | None) -> Progress:
        def hook(n: int) -> None:
            if self.cancelled.is_set():
                raise Cancelled
            if shown is not None:
                shown(n)

        return hook

    @staticmethod
    def _verify(store: BlobStore, digest: Digest, size: int, hook: Progress, rehash: bool) -> bool:
        try:
            store.verify(digest, label=digest.hex, size=size, progress=hook, rehash=rehash)
        except (PinbenchError, Cancelled):
            return False
        return True


@contextmanager
def hashes_ahead(
    store: BlobStore,
    pins: list[Pin],
    *,
    progress: Callable[[str, int], Progress] | None = None,
    rehash: bool = False,
) -> Iterator[HashesAhead]:
    cancelled = threading.Event()
    with ThreadPoolExecutor(WORKERS, thread_name_prefix="pinbench-hash-ahead") as pool:
        ahead = HashesAhead(pool, cancelled)
        try:
            ahead.start(store, pins, progress=progress, rehash=rehash)
            yield ahead
        finally:
            cancelled.set()  # whatever was not asked for stops at its next chunk
            pool.shutdown(wait=True, cancel_futures=True)
