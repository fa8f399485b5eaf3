"""A consistent copy of the database and its restoring (decision 149): SQLite through the
``sqlite3`` backup API (a page-by-page copy of one snapshot, never a copy of a live file),
PostgreSQL through ``pg_dump`` / ``pg_restore`` (custom format) of the configured URL, the
password passed in the environment, never on a command line. The errors of a backup and a
restore are here too."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

from pinbench.errors import SystemFailure, UserError

SQLITE_DUMP = "database.sqlite"
PG_DUMP = "database.pgdump"
DUMP_TIMEOUT_S = 6 * 3600
"""The longest a dump or restore may take (six hours): a hung server is not waited on for ever."""


class BackupRefused(UserError):
    """A backup or restore that cannot be done as asked: ``folder`` and why; nothing written."""

    def __init__(self, *, folder: str, reason: str) -> None:
        super().__init__(f"{folder}: {reason}; nothing was written")
        self.folder = folder
        self.reason = reason


class BackupBlobBad(UserError):
    """A blob (or the database's file) a backup lists is missing, or its bytes hash to
    another digest: nothing of the restore was written."""

    def __init__(self, *, path: str, expected: str, actual: str | None, size: int) -> None:
        found = (
            f"is missing (it should hash to sha256 {expected})"
            if actual is None
            else f"hashes to {actual} ({size} bytes), not to its sha256 {expected}"
        )
        super().__init__(
            f"the backup's file {path} {found}: the backup is damaged; nothing was restored"
        )
        self.path = path
        self.expected = expected
        self.actual = actual
        self.size = size


class BackupSourceBad(UserError):
    """A blob a backup takes hashes to another digest in the store: no backup is made."""

    def __init__(self, *, path: str, label: str, actual: str) -> None:
        super().__init__(
            f"{path} ({label}) hashes to {actual}, not to its name: the store is damaged and "
            "no backup was made. Run `pinbench fsck` to list every damaged blob, then put each "
            "back from another copy, or delete the runs that reference it (docs/operations.md, "
            "Backup and restore)"
        )
        self.path = path
        self.label = label
        self.actual = actual


class ToolMissing(SystemFailure):
    """``pg_dump`` or ``pg_restore`` is not installed where pinbench looks."""

    def __init__(self, *, tool: str, reason: str) -> None:
        super().__init__(
            f"{tool} is {reason}: install the PostgreSQL client of the server's major version "
            "or later (Debian: apt-get install postgresql-client)"
        )
        self.reason = reason
        self.tool = tool


class ToolFailed(SystemFailure):
    def __init__(self, *, tool: str, code: int, stderr: str) -> None:
        super().__init__(f"{tool} failed (exit {code}): {stderr.strip()[-2000:]}")
        self.tool = tool
        self.code = code
        self.stderr = stderr


def pg_tool(name: str) -> Path:
    """The newest ``name`` of Debian's PostgreSQL packages, else the system's
    (``pinbench.programs``: never one found by PATH)."""
    from pinbench.programs import POSTGRESQL_DIRS, ProgramUnavailable, system_program

    try:
        return system_program(name, POSTGRESQL_DIRS)
    except ProgramUnavailable as exc:
        raise ToolMissing(tool=name, reason=exc.reason) from None


def _major(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _libpq(url: str) -> tuple[str, dict[str, str]]:
    """A libpq connection URI for a SQLAlchemy URL, and the environment holding its password."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    env = dict(os.environ)
    if parsed.password is not None:
        env["PGPASSWORD"] = str(parsed.password)
    plain = parsed.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def _run(tool: str, args: list[str], url: str) -> None:
    uri, env = _libpq(url)
    cmd = [str(pg_tool(tool)), *args, "--dbname", uri]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise ToolFailed(tool=tool, code=-1, stderr=f"timed out after {exc.timeout} s") from None
    if done.returncode != 0:
        raise ToolFailed(tool=tool, code=done.returncode, stderr=done.stderr)


def pg_dump(url: str, target: Path, *, snapshot: str) -> None:
    """Dump the database in one exported ``snapshot`` (``pg_export_snapshot()`` of a
    transaction the caller holds open)."""
    _run(
        "pg_dump",
        [
            "--format=custom",
            "--no-owner",
            "--no-privileges",
            f"--snapshot={snapshot}",
            "--file",
            str(target),
        ],
        url,
    )


def pg_restore(url: str, dump: Path) -> None:
    """Restore a dump into the (empty) database, in one transaction: all or nothing."""
    _run(
        "pg_restore",
        ["--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error", str(dump)],
        url,
    )


def sqlite_copy(source: Path, target: Path, *, backup: bool = False) -> None:
    """Copy one SQLite database into another file through the backup API (one consistent
    snapshot of ``source`` while writers go on). ``backup``: from a live database into a
    backup, whose copy is then made a rollback-journal database (no ``-wal`` or ``-shm`` file
    is made beside it when it is read); otherwise from a backup, opened ``immutable`` (nothing
    is written beside it)."""
    if not source.is_file():
        raise BackupRefused(folder=str(source), reason="no such SQLite database")
    uri = source.resolve().as_uri() + ("?mode=ro" if backup else "?mode=ro&immutable=1")
    try:
        src = sqlite3.connect(uri, uri=True)
        try:
            dst = sqlite3.connect(target)
            try:
                src.backup(dst)
                if backup:
                    dst.execute("PRAGMA journal_mode=DELETE")
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise ToolFailed(tool="sqlite3 backup", code=-1, stderr=f"{source}: {exc}") from None


def sqlite_tables(path: Path) -> list[str]:
    """The tables of a SQLite file (none when it does not exist)."""
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    finally:
        conn.close()
