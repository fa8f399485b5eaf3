"""``pinbench backup DIR`` (decision 149): the database first, then the blobs it references.

Blobs are immutable and only ever added, so every blob the database snapshot references
exists when the snapshot has been taken; copying them afterwards makes a consistent pair
(extra blobs would be harmless). The other order is not: blobs copied first, then a database
dumped that references a blob published meanwhile, restores a registry missing that blob.

The folder holds ``database.sqlite`` (the ``sqlite3`` backup API) or ``database.pgdump``
(``pg_dump`` in the snapshot the references were read in), ``blobs/xx/HEX`` (copies, never
hard links: issue 71; none with ``blobs=False``), ``keys/`` (the signing
keys: the folder is as secret as the home) and, written last, ``manifest.json``: every file
it holds with its sha256 and size (format 2, decision 181). A folder without it is no backup.

What it takes is hashed as it is taken (decision 181): each blob once placed (a blob whose
bytes are not its name's fails the backup, naming it), the database's file, each key. A folder
inside the home or the blob store is refused: the backup would be part of what it copies.

With the blobs in object storage the bucket is the truth (decision 284): each blob's bytes are
read from the bucket and hashed as they stream into the backup (``S3BlobStore.copy_out``);
this machine's local copies are neither read nor linked, so a copy damaged here changes
nothing, and a blob the bucket lacks, or holds with other bytes, fails the backup naming it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.digest import Digest, hash_file
from pinbench.artifacts.store import BlobMissing, ChecksumMismatch
from pinbench.db import dumps
from pinbench.db.upkeep import references

if TYPE_CHECKING:
    from pinbench.artifacts.s3store import S3BlobStore
    from pinbench.workspace import Workspace

FORMAT = "pinbench-backup/2"
"""Format 2 lists every file with its sha256 (the keys too); format 1 named the keys only."""
FORMATS = ("pinbench-backup/1", FORMAT)
"""The formats ``restore`` reads."""
MANIFEST = "manifest.json"
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""The name of a key file a backup holds (one being written starts with a dot)."""
CACHE_KEY = "verified-cache.key"
"""The verified-state cache's key: of this machine's cache, not backed up."""
SAY_EVERY_S = 5.0
"""How often a backup says how far it has got."""


@dataclass(frozen=True)
class BackedUp:
    folder: str
    database: str
    revision: str
    blobs: int
    bytes: int
    linked: int
    copied: int
    included: bool
    source: str
    """Where the blobs' bytes were read: the home's folder, or the bucket (``s3://...``)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "database": self.database,
            "revision": self.revision,
            "blobs": self.blobs,
            "bytes": self.bytes,
            "linked": self.linked,
            "copied": self.copied,
            "blobs_included": self.included,
            "blobs_from": self.source,
        }


def place(source: Path, target: Path) -> bool:
    """``target`` as a read-only copy of ``source``; False (never linked, issue 71). A hard
    link shared the blob's inode between the home and the backup: a blob rewritten in place in
    the home changed the backup taken before, which then restored it as it was rewritten."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.part")
    shutil.copyfile(source, temp)
    temp.chmod(0o444)
    os.replace(temp, target)
    return False


def _outside(ws: Workspace, folder: Path) -> None:
    """Refuse a folder inside the home or the blob store (its copies would land among what it
    copies: private keys among the blobs, blobs among the blobs)."""
    target = folder.resolve()
    for what, root in (
        ("the home", ws.settings.home),
        ("the blob store", ws.store.root),
        ("the blob store", ws.store.blobs),
    ):
        if target.is_relative_to(root.resolve()):
            raise dumps.BackupRefused(
                folder=str(folder),
                reason=f"it is inside {what} ({root}): back up into a folder outside both",
            )


def _empty_folder(folder: Path) -> bool:
    """Refuse a folder that holds anything; True when this call made it."""
    if folder.exists():
        if not folder.is_dir():
            raise dumps.BackupRefused(folder=str(folder), reason="not a folder")
        if any(folder.iterdir()):
            raise dumps.BackupRefused(
                folder=str(folder), reason="the folder is not empty (back up into a new one)"
            )
        return False
    from pinbench.artifacts.destination import folder as made_folder

    made_folder(folder, option="", parents=True)  # a dangling link or a file's path: refused
    return True


def _snapshot(ws: Workspace, folder: Path) -> tuple[str, dict[str, str]]:
    """Write the database's snapshot into ``folder``; its dump's file name and the blobs it
    references (read from that same snapshot)."""
    from pinbench.db.plain import connection_rows, sqlite_file, sqlite_reads

    with ws.reads():  # the schema is current (checked on first use)
        pass
    source = sqlite_file(ws.settings.database_url)
    if source is not None:  # SQLite's own driver: no SQLAlchemy
        target = folder / dumps.SQLITE_DUMP
        dumps.sqlite_copy(source, target, backup=True)
        with sqlite_reads(target) as rows:
            return dumps.SQLITE_DUMP, references(rows, ws.store)
    from sqlalchemy import text

    dialect = ws.engine.dialect.name
    if dialect == "sqlite":
        raise dumps.BackupRefused(
            folder=str(folder), reason="only a SQLite file given as sqlite:///PATH is backed up"
        )
    if dialect != "postgresql":
        raise dumps.BackupRefused(
            folder=str(folder), reason=f"a {dialect} database is not backed up"
        )
    with ws.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            snapshot = str(conn.execute(text("SELECT pg_export_snapshot()")).scalar_one())
            refs = references(connection_rows(conn), ws.store)
            dumps.pg_dump(ws.settings.database_url, folder / dumps.PG_DUMP, snapshot=snapshot)
    return dumps.PG_DUMP, refs


def backup(
    ws: Workspace, folder: Path, *, blobs: bool = True, say: Callable[[str], None] | None = None
) -> BackedUp:
    """Back the registry up into ``folder`` (absent or empty); a failure leaves nothing.
    ``say`` is told how far it has got, every ``SAY_EVERY_S`` while blobs are taken."""
    from pinbench.artifacts.s3store import S3BlobStore
    from pinbench.db.schema import HEAD_REVISION

    _outside(ws, folder)
    remote = ws.store if isinstance(ws.store, S3BlobStore) else None
    source = str(remote.bucket.location) if remote is not None else str(ws.store.blobs)
    made = _empty_folder(folder)
    try:
        dump, refs = _snapshot(ws, folder)
        dialect = "sqlite" if dump == dumps.SQLITE_DUMP else "postgresql"
        dump_digest, dump_size = hash_file(folder / dump)
        listed: list[dict[str, Any]] = []
        linked = copied = 0
        told = _Told(say, len(refs), source)
        sizes = _bucket_sizes(remote) if remote is not None and not blobs else None
        for digest in sorted(refs):
            label = refs[digest]
            if sizes is not None:  # listed from the bucket, nothing read
                if digest not in sizes:
                    raise BlobMissing(path=label, digest=Digest(digest))
                size = sizes[digest]
            elif remote is not None:  # read from the bucket, hashed as it is written here
                size = _from_bucket(remote, digest, folder, label)
                copied += 1
            else:
                path = ws.store.path(Digest(digest))
                try:
                    size = path.stat().st_size
                except FileNotFoundError:
                    raise BlobMissing(path=label, digest=Digest(digest)) from None
                if blobs:
                    if _take(path, folder / "blobs" / digest[:2] / digest, label):
                        linked += 1
                    else:
                        copied += 1
            listed.append({"sha256": digest, "size": size})
            told.one(size)
        keys = _copy_keys(ws.settings.home / "keys", folder / "keys")
        manifest = {
            "format": FORMAT,
            "created_at": datetime.now(UTC).isoformat(),
            "database": {
                "dialect": dialect,
                "file": dump,
                "revision": HEAD_REVISION,
                "sha256": dump_digest.hex,
                "size": dump_size,
            },
            "blobs_included": blobs,
            "blobs": listed,
            "keys": keys,
        }
        temp = folder / f".{MANIFEST}.part"
        temp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        os.replace(temp, folder / MANIFEST)
    except BaseException:
        _undo(folder, made)
        raise
    return BackedUp(
        folder=str(folder),
        database=dialect,
        revision=HEAD_REVISION,
        blobs=len(listed),
        bytes=sum(int(b["size"]) for b in listed),
        linked=linked,
        copied=copied,
        included=blobs,
        source=source,
    )


class _Told:
    """A backup's progress, said every ``SAY_EVERY_S`` (and at its end when it was said)."""

    def __init__(self, say: Callable[[str], None] | None, total: int, source: str) -> None:
        self.say, self.total, self.source = say, total, source
        self.done = self.bytes = 0
        self.said = time.monotonic()

    def one(self, size: int) -> None:
        self.done += 1
        self.bytes += size
        now = time.monotonic()
        if self.say is not None and (now - self.said >= SAY_EVERY_S):
            self.say(
                f"backup: {self.done:,} of {self.total:,} blobs ({self.bytes:,} bytes) taken "
                f"from {self.source}"
            )
            self.said = now


def _from_bucket(store: S3BlobStore, digest: str, folder: Path, label: str) -> int:
    """The bucket's bytes of a blob written into the backup as they are hashed; a blob the
    bucket lacks (``BlobMissing``) or holds with other bytes (``BackupSourceBad``) fails it."""
    target = folder / "blobs" / digest[:2] / digest
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        return store.copy_out(Digest(digest), target, label=label)
    except ChecksumMismatch as exc:
        raise dumps.BackupSourceBad(
            path=f"{store.bucket.location}/{_shown(digest)}", label=label, actual=exc.actual.hex
        ) from None


def _take(source: Path, target: Path, label: str) -> bool:
    """Place a blob in the backup (``place``: linked or not) and hash what the backup now
    holds; a blob that is not a plain file, or whose bytes are not its name's, fails it."""
    digest = source.name
    if not stat.S_ISREG(os.lstat(source).st_mode):
        raise dumps.BackupRefused(
            folder=str(target.parents[2]),
            reason=f"blob {_shown(digest)} ({label}) in the store is not a plain file",
        )
    linked = place(source, target)
    actual, _ = hash_file(target)
    if actual.hex != digest:
        raise dumps.BackupSourceBad(path=_shown(digest), label=label, actual=actual.hex)
    return linked


def _shown(digest: str) -> str:
    return f"blobs/{digest[:2]}/{digest}"


def _bucket_sizes(store: S3BlobStore) -> dict[str, int]:
    """For ``--no-blobs`` on object storage: each blob's size as the bucket lists it (nothing
    downloaded)."""
    return {s.digest: s.size for s in store.listing() if s.digest is not None}


def _copy_keys(source: Path, target: Path) -> list[dict[str, Any]]:
    """The signing keys' files (owner-only, each hashed as copied), the cache's key left out;
    a key that is a symbolic link is refused (the key loader refuses it too)."""
    entries = sorted(source.iterdir()) if source.is_dir() else []
    keys: list[dict[str, Any]] = []
    for path in entries:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            raise dumps.BackupRefused(
                folder=str(target.parent),
                reason=f"the key {path} is a symbolic link: a signing key is a plain file",
            )
        if not stat.S_ISREG(mode) or path.name == CACHE_KEY or not KEY_NAME.fullmatch(path.name):
            continue  # the cache's key, or a key being written (``.NAME.XXXX``)
        if not keys:
            target.mkdir(mode=0o700)
        shutil.copyfile(path, target / path.name)
        (target / path.name).chmod(0o600)
        digest, size = hash_file(target / path.name)
        keys.append({"name": path.name, "sha256": digest.hex, "size": size})
    return keys


def _undo(folder: Path, made: bool) -> None:
    if made:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in list(folder.iterdir()):
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
