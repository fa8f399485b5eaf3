"""The verified-state cache: a file whose (size, mtime_ns, ctime_ns, inode) is unchanged since it
was last hashed keeps its digest, so re-verifying it does not read its bytes again.

``ctime`` is part of the key because no user call can set it: a write that restores the old
mtime (``touch -d``) still changes ctime, so it still forces a re-hash.

Each entry carries an HMAC-SHA256 of (path, state, digest) keyed by a secret kept apart from the
cache (``HOME/keys/verified-cache.key``, mode 0600, made at ``init`` or first use). Someone who
can edit the cache but not read the key cannot bless tampered bytes by writing the tampered
file's new state beside the old digest: an entry whose MAC does not check is ignored and the
file hashed again. A missing key is made anew (every old entry then fails its check); a key that
others may read or write, or that another user owns, is not trusted and the cache is not used.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import sqlite3
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pinbench.artifacts.digest import Digest, Progress, hash_file

KEY_BYTES = 32


@dataclass(frozen=True, slots=True)
class FileState:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileState:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def ensure_key(path: Path) -> None:
    """Create the cache's secret key (0600, in a 0700 directory) unless it exists.

    Written whole to a temp file, then linked into place: a reader never sees a partial key and
    two processes creating it at once agree on one."""
    if path.exists():
        return
    import secrets

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = path.parent / f".{path.name}.{secrets.token_hex(8)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(KEY_BYTES))
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def read_key(path: Path) -> bytes | None:
    """The key, or None where it cannot be trusted (others may read or write it, another user
    owns it, or it is not a regular file of the right size)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        private = st.st_mode & (stat.S_IRWXG | stat.S_IRWXO) == 0
        if not (stat.S_ISREG(st.st_mode) and private and st.st_uid == os.geteuid()):
            return None
        key = handle.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None


RETRY_S = 60.0
"""After an error, how long the cache is skipped before it is tried again."""


class VerifiedCache:
    """Maps absolute paths to the digest they had in a recorded state; a small SQLite file
    whose entries are authenticated by a key kept beside, not in, it."""

    def __init__(self, path: Path, key_path: Path) -> None:
        self._path = path
        self._key_path = key_path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self._broken = False
        self._retry_at = 0.0

    def _db(self) -> sqlite3.Connection:
        """One connection per thread (sqlite3 connections must stay in their thread)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self._path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("DROP TABLE IF EXISTS verified")  # entries made before MACs
            conn.execute(
                "CREATE TABLE IF NOT EXISTS entries (path TEXT PRIMARY KEY, size INTEGER,"
                " mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER, digest TEXT, mac TEXT)"
            )
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def _key(self) -> bytes | None:
        """Read on each use, not kept: a key replaced or loosened meanwhile is noticed. None
        (the cache unused) where it cannot be made, e.g. in a home this user may only read."""
        try:
            ensure_key(self._key_path)
        except OSError:
            return None
        return read_key(self._key_path)

    def close(self) -> None:
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
        self._local = threading.local()

    def _skipped(self) -> bool:
        """Whether the cache is being skipped after an error (until ``RETRY_S`` has passed)."""
        if self._broken and time.monotonic() >= self._retry_at:
            self._broken = False
        return self._broken

    def _unusable(self, exc: sqlite3.Error) -> None:
        """The cache's file cannot be opened, read or written (a full disk, an I/O error, a
        read-only home): the cache is skipped for ``RETRY_S`` (then tried again), which only
        costs hashing again; said once, never a failure of the command."""
        if not self._broken:
            import logging

            logging.getLogger(__name__).warning(
                "the verified-state cache %s is not used (%s): files are hashed again",
                self._path,
                exc,
            )
        self._broken = True
        self._retry_at = time.monotonic() + RETRY_S

    def lookup(self, path: Path, state: FileState) -> Digest | None:
        """The digest recorded for ``path`` in exactly ``state``, if its MAC checks."""
        key = self._key()
        if key is None or self._skipped():
            return None
        try:
            row = (
                self._db()
                .execute(
                    "SELECT size, mtime_ns, ctime_ns, inode, digest, mac FROM entries"
                    " WHERE path = ?",
                    (str(path),),
                )
                .fetchone()
            )
        except sqlite3.Error as exc:
            self._unusable(exc)
            return None
        if row is None or FileState(row[0], row[1], row[2], row[3]) != state:
            return None
        digest, mac = str(row[4]), str(row[5])
        if not hmac.compare_digest(mac, _mac(key, path, state, digest)):
            return None
        return Digest(digest)

    def record(self, path: Path, state: FileState, digest: Digest) -> None:
        self.record_many([(path, state, digest)])

    def record_many(self, entries: list[tuple[Path, FileState, Digest]]) -> None:
        """``record`` each entry, all in one transaction (one sync for all of them)."""
        key = self._key()
        if key is None or not entries or self._skipped():
            return
        rows = [_row(key, p, s, d) for p, s, d in entries]
        db: sqlite3.Connection | None = None
        try:
            db = self._db()
            db.execute("BEGIN")
            db.executemany(_INSERT, rows)
            db.execute("COMMIT")
        except BaseException as exc:
            if db is not None and db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            if not isinstance(exc, sqlite3.Error):
                raise
            self._unusable(exc)

    def digest(
        self, path: Path, *, progress: Progress | None = None, rehash: bool = False
    ) -> tuple[Digest, int, bool]:
        """Return (digest, size, hashed): the cached digest if the file is unchanged, else hash it.
        ``rehash``: never trust the cache, always read the bytes (the entry is then refreshed).

        The state is read before hashing and checked again after: a file that changed while it
        was read is not recorded.
        """
        path = path.resolve()
        before = FileState.of(path.stat())
        cached = None if rehash else self.lookup(path, before)
        if cached is not None:
            if progress is not None:
                progress(before.size)
            return cached, before.size, False
        digest, size = hash_file(path, progress=progress)
        if FileState.of(path.stat()) == before:
            self.record(path, before, digest)
        return digest, size, True


_INSERT = "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)"


def _row(
    key: bytes, path: Path, state: FileState, digest: Digest
) -> tuple[str, int, int, int, int, str, str]:
    """One ``entries`` row: the file's path and state, its digest and their MAC."""
    mac = _mac(key, path, state, digest.hex)
    return (str(path), state.size, state.mtime_ns, state.ctime_ns, state.inode, digest.hex, mac)


def _mac(key: bytes, path: Path, state: FileState, digest: str) -> str:
    message = "\0".join(
        (str(path), str(state.size), str(state.mtime_ns), str(state.ctime_ns), str(state.inode))
    )
    return hmac.new(key, f"{message}\0{digest}".encode(), hashlib.sha256).hexdigest()
