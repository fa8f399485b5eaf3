"""What ``pinbench restore`` checks before it writes anything (decisions 149 and 181).

In order, each refusal naming what is wrong: the manifest parses and is one this pinbench
reads (format 2, or format 1, whose keys it names without hashes), at this pinbench's schema
revision; the folder holds nothing but what the manifest lists, and no symbolic link anywhere
(nothing outside the backup is followed); the target is empty (no table, no key, nothing among
its blobs) and of the backup's kind of database; the database's file, every blob and every key
hash to the manifest's sha256 and size; the database references no blob the backup lacks (its
dump read without restoring it, ``db.dump_rows``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.digest import Digest, hash_stream
from pinbench.bounds import FILE_SIZE
from pinbench.db import dumps
from pinbench.db.backup import CACHE_KEY, FORMATS, KEY_NAME, MANIFEST

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

_HEX = re.compile(r"[0-9a-f]{64}")
_SHARD = re.compile(r"blobs/[0-9a-f]{2}")
_FILES = {"sqlite": dumps.SQLITE_DUMP, "postgresql": dumps.PG_DUMP}


@dataclass(frozen=True)
class KeyFile:
    name: str
    sha256: str | None
    """None in a format-1 backup, which named its keys only."""
    size: int | None


@dataclass(frozen=True)
class BackupManifest:
    dialect: str
    dump: Path
    dump_sha256: str
    dump_size: int
    included: bool
    blobs: list[tuple[str, int]]
    keys: list[KeyFile]

    @property
    def unhashed_keys(self) -> list[str]:
        """The keys a format-1 manifest names without a sha256."""
        return [k.name for k in self.keys if k.sha256 is None]


def refused(folder: Path, reason: str) -> dumps.BackupRefused:
    return dumps.BackupRefused(folder=str(folder), reason=reason)


def check_backup(ws: Workspace, folder: Path) -> BackupManifest:
    """Every check of the module's text, in its order; the manifest, once all hold."""
    if folder.exists() and not folder.is_dir():
        raise refused(folder, "not a folder (a backup is the folder `pinbench backup` made)")
    manifest = read_manifest(folder)
    _inventory(folder, manifest)
    _check_target(ws, folder, manifest)
    _verify(ws, folder, manifest)
    _held(ws, folder, manifest)
    return manifest


def read_manifest(folder: Path) -> BackupManifest:
    from pinbench.db.schema import HEAD_REVISION

    try:
        doc = json.loads(_read_plain(folder / MANIFEST))
    except FileNotFoundError:
        raise refused(folder, f"no {MANIFEST}: not a pinbench backup (or one cut short)") from None
    except (OSError, ValueError) as exc:
        raise refused(folder, f"{MANIFEST} cannot be read: {exc}") from None
    try:
        if doc["format"] not in FORMATS:
            raise refused(folder, f"format {doc['format']!r} is not one of {', '.join(FORMATS)}")
        db = doc["database"]
        dialect, revision = str(db["dialect"]), str(db["revision"])
        if dialect not in _FILES or db["file"] != _FILES[dialect]:
            raise refused(
                folder, f"database {dialect!r} ({db['file']!r}) is not one pinbench makes"
            )
        if revision != HEAD_REVISION:
            raise refused(
                folder,
                f"its database is at schema revision {revision}, this pinbench's is "
                f"{HEAD_REVISION}: restore it with the pinbench that made it, then upgrade",
            )
        blobs = [(str(b["sha256"]), b["size"]) for b in doc["blobs"]]
        for digest, size in blobs:
            _digest_and_size(folder, f"blob {digest[:80]!r}", digest, size)
        dump_sha256, dump_size = str(db["sha256"]), db["size"]
        _digest_and_size(folder, "the database file", dump_sha256, dump_size)
        keys = [_key(folder, k, doc["format"] == FORMATS[0]) for k in doc["keys"]]
        return BackupManifest(
            dialect,
            folder / _FILES[dialect],
            dump_sha256,
            dump_size,
            bool(doc["blobs_included"]),
            blobs,
            keys,
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise refused(folder, f"{MANIFEST} lacks or mistypes {exc}") from None


def _digest_and_size(folder: Path, what: str, digest: str, size: object) -> None:
    if not _HEX.fullmatch(digest):
        raise refused(folder, f"{what}: its sha256 {digest[:80]!r} is not one")
    if type(size) is not int or not FILE_SIZE.holds(size):
        raise refused(folder, f"{what}: {FILE_SIZE.refusal('size', size)}")


def _key(folder: Path, entry: Any, names_only: bool) -> KeyFile:
    """A key of the manifest: a plain file name, with its sha256 and size (format 2)."""
    if names_only:
        name, sha256, size = str(entry), None, None
    else:
        name, sha256, size = str(entry["name"]), str(entry["sha256"]), entry["size"]
        _digest_and_size(folder, f"key {name[:80]!r}", sha256, size)
    if not KEY_NAME.fullmatch(name) or name == CACHE_KEY:
        raise refused(folder, f"a key's file name {name[:80]!r} is not a plain name")
    return KeyFile(name, sha256, size)


def _inventory(folder: Path, manifest: BackupManifest) -> None:
    """Refuse a symbolic link anywhere in the folder, and anything the manifest does not list
    (a file, or a folder other than ``blobs``, ``blobs/xx`` and ``keys``)."""
    files = {MANIFEST, manifest.dump.name, *(f"keys/{k.name}" for k in manifest.keys)}
    if manifest.included:
        files.update(f"blobs/{d[:2]}/{d}" for d, _ in manifest.blobs)
    for name, mode in _entries(folder):
        if stat.S_ISLNK(mode):
            raise refused(
                folder,
                f"{name} is a symbolic link: a backup holds none (nothing outside it is followed)",
            )
        if stat.S_ISDIR(mode):
            if name not in ("blobs", "keys") and not _SHARD.fullmatch(name):
                raise refused(folder, f"{name}/ is not a folder a backup holds")
        elif not stat.S_ISREG(mode):
            raise refused(folder, f"{name} is not a plain file")
        elif name not in files:
            raise refused(
                folder, f"{name} is not in its {MANIFEST}: a backup holds only what it lists"
            )


def _entries(folder: Path) -> Iterator[tuple[str, int]]:
    """Every entry under ``folder`` (its path relative to it, its ``lstat`` mode), a folder
    before what it holds; nothing followed. The caller refuses a folder before it is entered."""
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(folder / rel) as found:
                entries = sorted(found, key=lambda e: e.name)
            for entry in entries:
                name = f"{rel}/{entry.name}" if rel else entry.name
                mode = entry.stat(follow_symlinks=False).st_mode
                yield name, mode
                if stat.S_ISDIR(mode):
                    pending.append(name)
        except OSError as exc:
            raise refused(folder, f"{rel or '.'} cannot be read: {exc.strerror}") from None


def _check_target(ws: Workspace, folder: Path, manifest: BackupManifest) -> None:
    """Refuse a target that is not empty or not of the backup's kind of database."""
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    from pinbench.db.plain import sqlite_file

    url = ws.settings.database_url
    dialect = make_url(url).get_backend_name()
    if dialect != manifest.dialect:
        raise refused(
            folder, f"a {manifest.dialect} backup restores into {manifest.dialect}, not {dialect}"
        )
    if dialect == "sqlite":
        path = sqlite_file(url)
        if path is None:
            raise refused(folder, "only a SQLite file given as sqlite:///PATH is restored into")
        tables = dumps.sqlite_tables(path)
    else:
        tables = inspect(ws.engine).get_table_names()
    if tables:
        raise refused(folder, f"the target database is not empty ({len(tables)} tables)")
    keys = ws.settings.home / "keys"
    if keys.is_dir() and any(p.name != CACHE_KEY for p in keys.iterdir()):
        raise refused(folder, f"the target home {ws.settings.home} has signing keys already")
    for entry in ws.store.listing():
        if entry.digest is None:
            raise refused(
                folder,
                f"the target home's {entry.where} is not a blob: restore into an empty home "
                "(or, for a --no-blobs backup, one holding its blobs only)",
            )
        if manifest.included:
            raise refused(folder, f"the target home {ws.settings.home} holds blobs already")


def _verify(ws: Workspace, folder: Path, manifest: BackupManifest) -> None:
    """Hash the database's file, every listed blob where the restore will take it from, and
    every key a format-2 manifest hashes."""
    _hashes(manifest.dump, manifest.dump.name, manifest.dump_sha256, manifest.dump_size)
    for key in manifest.keys:
        if key.sha256 is not None and key.size is not None:
            _hashes(folder / "keys" / key.name, f"keys/{key.name}", key.sha256, key.size)
    if not manifest.included and _remote(ws):
        for digest, size in manifest.blobs:  # in the target's bucket: hash its bytes there
            ws.store.check(Digest(digest), label=f"blob {digest}", size=size)
        return
    root = folder / "blobs" if manifest.included else ws.store.blobs
    for digest, size in manifest.blobs:
        path = root / digest[:2] / digest
        _hashes(
            path, f"blobs/{digest[:2]}/{digest}" if manifest.included else str(path), digest, size
        )


def _hashes(path: Path, shown: str, digest: str, size: int) -> None:
    """``path`` is a plain file (not followed) whose bytes hash to ``digest``, ``size`` long."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise dumps.BackupBlobBad(path=shown, expected=digest, actual=None, size=0) from None
    except OSError as exc:
        why = "is a symbolic link" if exc.errno == errno.ELOOP else f"cannot be read: {exc}"
        raise refused(path.parent, f"{shown} {why}") from None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise refused(path.parent, f"{shown} is not a plain file")
        actual, actual_size = hash_stream(handle)
    if actual.hex != digest or actual_size != size:
        raise dumps.BackupBlobBad(path=shown, expected=digest, actual=actual.hex, size=actual_size)


def _held(ws: Workspace, folder: Path, manifest: BackupManifest) -> None:
    """Refuse a database that references a blob the backup does not list."""
    from pinbench.db.dump_rows import dump_references

    def envelope(digest: Digest) -> Path:
        if manifest.included:
            return folder / "blobs" / digest.hex[:2] / digest.hex
        return ws.store.local(digest)

    listed = {digest for digest, _ in manifest.blobs}
    refs = dump_references(manifest.dialect, manifest.dump, envelope)
    missing = sorted(set(refs) - listed)
    if missing:
        raise refused(
            folder,
            f"its database references blob {missing[0]} ({refs[missing[0]]}), which its "
            f"{MANIFEST} does not list ({len(missing)} such blobs): the backup is incomplete",
        )


def _remote(ws: Workspace) -> bool:
    """Whether the target home keeps its blobs in object storage (they are uploaded there)."""
    from pinbench.artifacts.s3store import S3BlobStore

    return isinstance(ws.store, S3BlobStore)


def _read_plain(path: Path) -> bytes:
    """A file's bytes, refused (``OSError``) when it is a symbolic link or not a plain file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(f"{path.name} is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path.name} is not a plain file")
        return handle.read()
