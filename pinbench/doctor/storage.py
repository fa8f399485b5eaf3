"""Where pinbench writes: free space of the home, the environments' cache and the scratch; the
configured database (reachable, at this pinbench's schema)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pinbench.doctor.findings import Finding, Place

GIB = 1 << 30
FAIL_BELOW = 1 * GIB
"""Free bytes under which a folder blocks runs (a model, its environment and a run's answers)."""
WARN_BELOW = 5 * GIB
"""Free bytes under which a folder warns (a framework's environment is gigabytes)."""


def _existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists (where it will be made)."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def space(what: str, folder: Path, env: str) -> Finding:
    name = f"space:{what}"
    at = _existing(folder)
    try:
        free = shutil.disk_usage(at).free
    except OSError as exc:
        return Finding(name, "fail", f"{folder}: {exc}", f"set {env} to a folder pinbench can use")
    said = f"{folder}: {free / GIB:,.1f} GiB free"
    fix = f"free space on {at}'s disk, or set {env} to a folder on another disk"
    if free < FAIL_BELOW:
        return Finding(name, "fail", said, fix)
    if free < WARN_BELOW:
        return Finding(name, "warn", said, fix)
    return Finding(name, "ok", said)


def shown_url(url: str) -> str:
    """``url`` with its password, in its user part or its query (``?password=``), as ``***``
    (as SQLAlchemy renders it); without one, ``url`` as it is (``urlunsplit`` would write
    SQLite's ``sqlite:////abs/path`` as ``sqlite://abs/path``, a host ``abs``)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = original = urlsplit(url)
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username}:***@{host}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k.lower() == "password" for k, _ in query):
        hidden = [(k, "***" if k.lower() == "password" else v) for k, v in query]
        parts = parts._replace(query=urlencode(hidden, safe="*"))
    return url if parts == original else urlunsplit(parts)


def database(place: Place) -> Finding:
    """The configured database: ``ok`` at this pinbench's schema; ``warn`` for a home not made
    yet (``pinbench init``; the demo makes its own); ``fail`` where it cannot be opened or is at
    another schema. Read as every working command reads (``Workspace.reads``: SQLite's own
    driver for the embedded database, SQLAlchemy Core for a server's)."""
    from pinbench.config import Settings, check_home
    from pinbench.db.schema import SchemaNotCurrent
    from pinbench.errors import PinbenchError
    from pinbench.workspace import Workspace

    settings = Settings.from_env(dict(place.environ))
    try:
        check_home(settings.home)
    except PinbenchError as exc:
        return Finding("database", "fail", str(exc), "set PINBENCH_HOME to a folder")
    ws = Workspace(settings)
    where = shown_url(settings.database_url)
    try:
        with ws.reads():
            pass
    except SchemaNotCurrent as exc:
        if exc.current is None:
            return Finding(
                "database",
                "warn",
                f"{where} has no schema yet (PINBENCH_HOME {settings.home} not initialised)",
                "pinbench init (pinbench demo makes a home of its own)",
            )
        return Finding("database", "fail", str(exc), "pinbench db upgrade")
    except PinbenchError as exc:
        return Finding(
            "database", "fail", str(exc), "check PINBENCH_DATABASE_URL and that its server runs"
        )
    finally:
        ws.close()
    return Finding("database", "ok", f"{where} at schema {_head()}")


def _head() -> str:
    from pinbench.db.schema import HEAD_REVISION

    return HEAD_REVISION


def check(place: Place) -> list[Finding]:
    return [
        space("home", place.home(), "PINBENCH_HOME"),
        space("cache", place.cache(), "PINBENCH_CACHE"),
        space("scratch", place.scratch(), "TMPDIR"),
        database(place),
    ]
