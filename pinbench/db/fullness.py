"""Whether a SQLite error is a full disk: SQLite says ``disk I/O error`` or ``database or disk
is full``, and the file's folder has (next to) no free space left."""

from __future__ import annotations

import os
from pathlib import Path

NEARLY_FULL = 1 << 20
"""Below this many free bytes, a disk error of SQLite's is taken to be a full disk."""


def with_free_space(reason: str, database: Path | None) -> str:
    """``reason``, naming the free space of ``database``'s filesystem when it is full."""
    if database is None or "disk" not in reason.lower():
        return reason
    folder = database.parent
    try:
        st = os.statvfs(folder)
    except OSError:
        return reason
    free = st.f_bavail * st.f_frsize
    if free >= NEARLY_FULL:
        return reason
    return f"{reason}: the disk is full ({folder} has {free:,} bytes free); free space there"
