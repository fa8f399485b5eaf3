"""The verified-state cache: a file whose (size, mtime_ns, ctime_ns, inode) is unchanged since it
was last hashed keeps its digest, so re-verifying it does not read its bytes again.

``ctime`` is part of the key because no user call can set it: a write that restores the old
mtime (``touch -d``) still changes ctime, so it still forces a re-hash.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from pinbench.artifacts.digest import Digest, Progress, hash_file


@dataclass(frozen=True, slots=True)
class FileState:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileState:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class VerifiedCache:
    """Maps absolute paths to the digest they had in a recorded state; a small SQLite file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []

    def _db(self) -> sqlite3.Connection:
        """One connection per thread (sqlite3 connections must stay in their thread)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self._path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS verified (path TEXT PRIMARY KEY, size INTEGER,"
                " mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER, digest TEXT)"
            )
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
        self._local = threading.local()

    def lookup(self, path: Path, state: FileState) -> Digest | None:
        row = (
            self._db()
            .execute(
                "SELECT size, mtime_ns, ctime_ns, inode, digest FROM verified WHERE path = ?",
                (str(path),),
            )
            .fetchone()
        )
        if row is None or FileState(row[0], row[1], row[2], row[3]) != state:
            return None
        return Digest(row[4])

    def record(self, path: Path, state: FileState, digest: Digest) -> None:
        self._db().execute(
            "INSERT OR REPLACE INTO verified VALUES (?, ?, ?, ?, ?, ?)",
            (str(path), state.size, state.mtime_ns, state.ctime_ns, state.inode, digest.hex),
        )

    def digest(self, path: Path, *, progress: Progress | None = None) -> tuple[Digest, int, bool]:
        """Return (digest, size, hashed): the cached digest if the file is unchanged, else hash it.

        The state is read before hashing and checked again after: a file that changed while it
        was read is not recorded.
        """
        path = path.resolve()
        before = FileState.of(path.stat())
        cached = self.lookup(path, before)
        if cached is not None:
            if progress is not None:
                progress(before.size)
            return cached, before.size, False
        digest, size = hash_file(path, progress=progress)
        if FileState.of(path.stat()) == before:
            self.record(path, before, digest)
        return digest, size, True
