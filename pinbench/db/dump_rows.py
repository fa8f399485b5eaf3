"""The blobs a backup's database references, read from its dump before anything is restored
(``db.restore``, decision 181): nothing is written, to the target or beside the dump.

A SQLite file is opened read-only and ``immutable`` (no journal, no ``-wal`` or ``-shm`` file
made beside it) and read as ``pinbench fsck`` reads a database (``upkeep.references_in``). A
PostgreSQL custom-format dump is read through ``pg_restore --data-only --table T --file -``,
which prints a table's rows as ``COPY`` text without any database; the four referencing
tables' rows are parsed from it (``upkeep.referenced``).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.db import dumps
from pinbench.db.upkeep import referenced, references_in

if TYPE_CHECKING:
    from pinbench.artifacts.digest import Digest

Envelope = Callable[["Digest"], Path]

_COPY = re.compile(r"COPY (?:\S+\.)?(\w+) \((.*)\) FROM stdin;")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)")
_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def dump_references(dialect: str, dump: Path, envelope: Envelope) -> dict[str, str]:
    """Every blob the dump's rows reference (digest -> what references it first)."""
    if dialect == "sqlite":
        return _sqlite_references(dump, envelope)
    return _pg_references(dump, envelope)


def _sqlite_references(dump: Path, envelope: Envelope) -> dict[str, str]:
    from pinbench.db.plain import sqlite_rows

    uri = f"{dump.resolve().as_uri()}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise dumps.ToolFailed(tool="sqlite3", code=-1, stderr=f"{dump.name}: {exc}") from None
    try:
        return references_in(sqlite_rows(conn), envelope)
    except Exception as exc:  # a file that hashes right but is no database of ours
        raise dumps.ToolFailed(tool="sqlite3", code=-1, stderr=f"{dump.name}: {exc}") from None
    finally:
        conn.close()


def _pg_references(dump: Path, envelope: Envelope) -> dict[str, str]:
    kinds = {
        row["id"]: f"{row['kind']}/{row['name']}@{row['version']}"
        for row in copy_rows(dump, "artifacts")
    }
    files = (
        (str(row["sha256"]), f"{kinds.get(row['artifact_id'], '?')}:{row['path']}")
        for row in copy_rows(dump, "artifact_files")
    )
    runs = (
        (
            str(row["id"]),
            row["latencies_sha256"],
            row["trace_sha256"],
            json.loads(row["details"]) if row["details"] is not None else None,
        )
        for row in copy_rows(dump, "runs")
    )
    attestations = (
        (str(row["run_id"]), str(row["envelope_sha256"])) for row in copy_rows(dump, "attestations")
    )
    return referenced(files, runs, attestations, envelope)


def copy_rows(dump: Path, table: str) -> Iterator[dict[str, str | None]]:
    """Each row of ``table`` in a custom-format dump, by column name (None for NULL), as
    ``pg_restore`` prints it; ``dumps.ToolFailed`` when it cannot read the dump."""
    cmd = [str(dumps.pg_tool("pg_restore")), "--data-only", f"--table={table}", "--file=-"]
    with subprocess.Popen(
        [*cmd, str(dump)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        columns: list[str] | None = None
        for line in proc.stdout:
            line = line.removesuffix("\n")
            if columns is None:
                found = _COPY.fullmatch(line)
                if found is not None and found[1] == table:
                    columns = [c.strip().strip('"') for c in found[2].split(",")]
                continue
            if line == "\\.":
                columns = None
                continue
            fields = line.split("\t")
            if len(fields) != len(columns):
                proc.kill()
                raise dumps.ToolFailed(
                    tool="pg_restore",
                    code=-1,
                    stderr=f"a row of {table} is not {len(columns)} fields",
                )
            yield dict(zip(columns, map(_field, fields), strict=True))
        stderr = proc.stderr.read()
        code = proc.wait(timeout=dumps.DUMP_TIMEOUT_S)
    if code != 0:
        raise dumps.ToolFailed(tool="pg_restore", code=code, stderr=stderr)


def _field(text: str) -> str | None:
    """One field of ``COPY``'s text format: ``\\N`` is NULL; backslash escapes undone."""
    if text == "\\N":
        return None
    return _ESCAPE.sub(_unescape, text) if "\\" in text else text


def _unescape(found: re.Match[str]) -> str:
    code = found[1]
    if code[0] == "x" and len(code) > 1:
        return chr(int(code[1:], 16))
    if code[0] in "01234567":
        return chr(int(code, 8))
    return _SIMPLE.get(code, code)
