"""Which file an SQLite database is: the file's device and inode when a server opened it.

A server holds its SQLite file open. Removed (``rm``) or replaced (a restore's copy renamed
over it) under the server, the path names another file, or none, while the server's
connections go on reading and writing the old one: what it writes then is lost at its next
start. ``OpenedFile.problem`` says so, for readiness.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine

REMOVED = (
    "the database file was removed after this server opened it: what it writes goes to a "
    "deleted file (put the file back, or restore it, and restart the server)"
)
REPLACED = (
    "the database file was replaced after this server opened it: it still reads and writes "
    "the old one (restart the server to use the file now at its path)"
)


@dataclass(frozen=True, slots=True)
class OpenedFile:
    """An SQLite database's file as it was when opened: its path, device and inode."""

    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, engine: Engine) -> OpenedFile | None:
        """The file of ``engine``'s database now; None when it is no SQLite file (another
        database, an in-memory one, a ``file:`` URI)."""
        url = engine.url
        name = url.database
        if url.get_backend_name() != "sqlite" or not name or name == ":memory:":
            return None
        if name.startswith("file:") or url.query.get("uri"):
            return None
        path = Path(name).absolute()
        st = os.stat(path)
        return cls(path, st.st_dev, st.st_ino)

    def problem(self) -> str | None:
        """None while the path still names this file; else what happened to it (naming no
        path: readiness is public)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return REMOVED
        except OSError as exc:
            return f"the database file cannot be looked at: {exc.strerror}"
        if (st.st_dev, st.st_ino) != (self.device, self.inode):
            return REPLACED
        return None
