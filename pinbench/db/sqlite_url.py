"""The file a plain SQLite URL names, read without SQLAlchemy (whose URL parser is the
import a read command avoids)."""

from __future__ import annotations

from pathlib import Path

SQLITE_PREFIX = "sqlite:///"


def sqlite_file(url: str) -> Path | None:
    """The file of a plain ``sqlite:///PATH`` URL. None for anything else (another database, a
    driver or query options, percent-escapes, an in-memory database): SQLAlchemy reads those."""
    if not url.startswith(SQLITE_PREFIX) or any(c in url for c in "?%#"):
        return None
    path = url[len(SQLITE_PREFIX) :]
    return None if path in ("", ":memory:") else Path(path)
