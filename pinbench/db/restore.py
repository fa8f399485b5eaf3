"""``pinbench restore DIR`` (decision 149): a backup (``db.backup``) into an empty home and
database, checked before anything is written.

In order: the manifest is read and checked (format, this pinbench's schema revision, the
target's kind of database); the target is refused unless empty (no table in its database; no
blob and no key in its home, except, for a backup made with ``--no-blobs``, the blobs the
operator put back, which must be there); every blob the manifest lists is hashed and must
hash to its name and have its size. Only then are the blobs placed (hard links, else copies),
the keys copied and the database written (SQLite through the backup API, PostgreSQL through
``pg_restore`` in one transaction); a failure on the way removes what was written. Last, the
store is checked as ``pinbench fsck`` does.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.digest import Digest, hash_file
from pinbench.bounds import FILE_SIZE
from pinbench.db import dumps
from pinbench.db.backup import CACHE_KEY, FORMAT, MANIFEST, place

if TYPE_CHECKING:
    from pinbench.db.upkeep import Checked
    from pinbench.workspace import Workspace

_HEX = re.compile(r"[0-9a-f]{64}")
_KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_FILES = {"sqlite": dumps.SQLITE_DUMP, "postgresql": dumps.PG_DUMP}


@dataclass(frozen=True)
class Restored:
    database: str
    blobs: int
    bytes: int
    linked: int
    copied: int
    checked: Checked

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "blobs": self.blobs,
            "bytes": self.bytes,
            "linked": self.linked,
            "copied": self.copied,
            "check": self.checked.to_json(),
        }


@dataclass(frozen=True)
class _Manifest:
    dialect: str
    dump: Path
    dump_sha256: str
    dump_size: int
    included: bool
    blobs: list[tuple[str, int]]
    keys: list[str]


def _refused(folder: Path, reason: str) -> dumps.BackupRefused:
    return dumps.BackupRefused(folder=str(folder), reason=reason)


def read_manifest(folder: Path) -> _Manifest:
    from pinbench.db.schema import HEAD_REVISION

    try:
        doc = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise _refused(folder, f"no {MANIFEST}: not a pinbench backup (or one cut short)") from None
    except (OSError, ValueError) as exc:
        raise _refused(folder, f"{MANIFEST} cannot be read: {exc}") from None
    try:
        if doc["format"] != FORMAT:
            raise _refused(folder, f"format {doc['format']!r} is not {FORMAT!r}")
        db = doc["database"]
        dialect, revision = str(db["dialect"]), str(db["revision"])
        if dialect not in _FILES or db["file"] != _FILES[dialect]:
            raise _refused(
                folder, f"database {dialect!r} ({db['file']!r}) is not one pinbench makes"
            )
        if revision != HEAD_REVISION:
            raise _refused(
                folder,
                f"its database is at schema revision {revision}, this pinbench's is "
                f"{HEAD_REVISION}: restore it with the pinbench that made it, then upgrade",
            )
        blobs = [(str(b["sha256"]), b["size"]) for b in doc["blobs"]]
        for digest, size in blobs:
            if not _HEX.fullmatch(digest):
                raise _refused(folder, f"blob name {digest[:80]!r} is not a sha256")
            if type(size) is not int or not FILE_SIZE.holds(size):
                raise _refused(folder, f"blob {digest}: {FILE_SIZE.refusal('size', size)}")
        dump_sha256, dump_size = str(db["sha256"]), db["size"]
        if not _HEX.fullmatch(dump_sha256) or type(dump_size) is not int:
            raise _refused(folder, "the database file's sha256 or size is not one")
        keys = [str(k) for k in doc["keys"]]
        if not all(_KEY_NAME.fullmatch(k) for k in keys):
            raise _refused(folder, "a key's file name is not a plain name")
        return _Manifest(
            dialect,
            folder / _FILES[dialect],
            dump_sha256,
            dump_size,
            bool(doc["blobs_included"]),
            blobs,
            keys,
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise _refused(folder, f"{MANIFEST} lacks or mistypes {exc}") from None


def _check_target(ws: Workspace, folder: Path, manifest: _Manifest) -> None:
    """Refuse a target that is not empty or not of the backup's kind of database."""
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    from pinbench.db.plain import sqlite_file

    url = ws.settings.database_url
    dialect = make_url(url).get_backend_name()
    if dialect != manifest.dialect:
        raise _refused(
            folder, f"a {manifest.dialect} backup restores into {manifest.dialect}, not {dialect}"
        )
    if dialect == "sqlite":
        path = sqlite_file(url)
        if path is None:
            raise _refused(folder, "only a SQLite file given as sqlite:///PATH is restored into")
        tables = dumps.sqlite_tables(path)
    else:
        tables = inspect(ws.engine).get_table_names()
    if tables:
        raise _refused(folder, f"the target database is not empty ({len(tables)} tables)")
    keys = ws.settings.home / "keys"
    if keys.is_dir() and any(p.name != CACHE_KEY for p in keys.iterdir()):
        raise _refused(folder, f"the target home {ws.settings.home} has signing keys already")
    if manifest.included and any(True for _ in ws.store.iter_digests()):
        raise _refused(folder, f"the target home {ws.settings.home} holds blobs already")


def _remote(ws: Workspace) -> bool:
    """Whether the target home keeps its blobs in object storage (they are uploaded there)."""
    from pinbench.artifacts.s3store import S3BlobStore

    return isinstance(ws.store, S3BlobStore)


def _verify(ws: Workspace, folder: Path, manifest: _Manifest) -> None:
    """Hash the database's file and every listed blob where the restore will take it from."""
    dump = manifest.dump
    if not dump.is_file():
        raise dumps.BackupBlobBad(
            path=dump.name, expected=manifest.dump_sha256, actual=None, size=0
        )
    actual, actual_size = hash_file(dump)
    if actual.hex != manifest.dump_sha256 or actual_size != manifest.dump_size:
        raise dumps.BackupBlobBad(
            path=dump.name, expected=manifest.dump_sha256, actual=actual.hex, size=actual_size
        )
    root = folder / "blobs" if manifest.included else ws.store.blobs
    if not manifest.included and _remote(ws):
        for digest, size in manifest.blobs:  # in the target's bucket: hash its bytes there
            ws.store.verify(Digest(digest), label=f"blob {digest}", size=size, rehash=True)
        return
    for digest, size in manifest.blobs:
        path = root / digest[:2] / digest
        shown = str(path) if not manifest.included else f"blobs/{digest[:2]}/{digest}"
        if not path.is_file():
            raise dumps.BackupBlobBad(path=shown, expected=digest, actual=None, size=0)
        actual, actual_size = hash_file(path)
        if actual.hex != digest or actual_size != size:
            raise dumps.BackupBlobBad(
                path=shown, expected=digest, actual=actual.hex, size=actual_size
            )


def restore(ws: Workspace, folder: Path) -> Restored:
    """Restore the backup in ``folder`` into ``ws`` (empty); see the module's text."""
    from pinbench.artifacts.s3store import S3BlobStore
    from pinbench.db.plain import sqlite_file
    from pinbench.db.upkeep import check

    home = ws.settings.home
    made_home = not home.exists()  # before anything (the checks may download) writes there
    manifest = read_manifest(folder)
    placed: list[Path] = []
    written: list[Path] = []
    uploaded: list[Digest] = []
    remote = ws.store if isinstance(ws.store, S3BlobStore) else None
    linked = copied = 0
    try:
        _check_target(ws, folder, manifest)
        _verify(ws, folder, manifest)
        ws.store.create()
        for digest, _ in manifest.blobs if manifest.included else []:
            source = folder / "blobs" / digest[:2] / digest  # hashed by _verify
            if remote is not None:  # into the bucket, from the backup's own file
                uploaded.append(Digest(digest))  # before: an interrupted upload is removed too
                if remote.upload_file(source, Digest(digest)):
                    copied += 1
                else:
                    uploaded.pop()
                continue
            target = ws.store.path(Digest(digest))
            if not target.exists():
                if place(source, target):
                    linked += 1
                else:
                    copied += 1
                placed.append(target)
        if manifest.keys:
            (home / "keys").mkdir(mode=0o700, exist_ok=True)
        for name in manifest.keys:
            target = home / "keys" / name
            shutil.copyfile(folder / "keys" / name, target)
            written.append(target)
            target.chmod(0o600)
        if manifest.dialect == "sqlite":
            path = sqlite_file(ws.settings.database_url)
            assert path is not None  # _check_target refused anything else
            path.parent.mkdir(parents=True, exist_ok=True)
            written.append(path)
            dumps.sqlite_copy(manifest.dump, path)
        else:
            dumps.pg_restore(ws.settings.database_url, manifest.dump)
    except BaseException:
        for made in uploaded:  # the bucket as it was: no object this restore put there
            with contextlib.suppress(Exception):
                ws.store.remove(made)
        if made_home:
            shutil.rmtree(home, ignore_errors=True)
        else:
            for path in [*placed, *written]:
                with contextlib.suppress(OSError):
                    path.unlink()
        raise
    return Restored(
        database=manifest.dialect,
        blobs=len(manifest.blobs),
        bytes=sum(size for _, size in manifest.blobs),
        linked=linked,
        copied=copied,
        checked=check(ws),
    )
