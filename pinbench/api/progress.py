"""A running run's latest progress line, where every server process on the home reads it
(issue 72, item 5): a client polling its run through ``PINBENCH_URL`` saw only its status, never
that its run was waiting for the blob store, and with ``serve --workers N`` the process that
answers a poll is not always the one running the run. The line is kept in
``HOME/cache/progress/<run id>`` while the run runs (each replaced whole), and removed when it
ends."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

MAX_CHARS = 1000
"""A longer line is cut to this many characters."""
_RUN_ID = re.compile(r"[0-9a-f-]{8,64}")


def _path(home: Path, run_id: str) -> Path | None:
    return home / "cache" / "progress" / run_id if _RUN_ID.fullmatch(run_id) else None


def said(home: Path, run_id: str, text: str) -> None:
    """Keep ``text`` as the run's latest line (a failure to write loses only the line)."""
    path = _path(home, run_id)
    if path is None:
        return
    temp = path.with_name(f".{run_id}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(text[:MAX_CHARS], encoding="utf-8")
        temp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def latest(home: Path, run_id: str) -> str | None:
    """The run's latest line, or None."""
    from pinbench.artifacts.plain_file import plain_bytes

    path = _path(home, run_id)
    if path is None:
        return None
    data = plain_bytes(path, MAX_CHARS * 4)
    return data.decode("utf-8", "replace") if data is not None else None


def forget(home: Path, run_id: str) -> None:
    path = _path(home, run_id)
    if path is not None:
        path.unlink(missing_ok=True)
