"""Reading a small file that a process we do not trust could have written (a worker's answers
folder, its cache): never a link followed, a FIFO waited on, a device read, nor more than a
cap read."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def plain_bytes(path: Path | str, cap: int, *, dir_fd: int | None = None) -> bytes | None:
    """The bytes of ``path`` (relative to the folder open at ``dir_fd``, when given) when it
    is a plain file of at most ``cap`` bytes; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
            return None
        chunks, left = [], cap
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
