"""``pinbench restore DIR`` (decisions 149 and 181): a backup (``db.backup``) into an empty home
and database, checked in full before anything is written (``db.backup_check``).

Once every check holds, the blobs are placed (copies, never hard links; uploaded to a target
on object storage), the keys copied and the database written (SQLite through the backup API,
PostgreSQL through ``pg_restore`` in one transaction); a failure on the way removes what was
written. Last, the store is checked as ``pinbench fsck`` does.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.digest import Digest
from pinbench.db import dumps
from pinbench.db.backup import place
from pinbench.db.backup_check import check_backup

if TYPE_CHECKING:
    from pinbench.db.upkeep import Checked
    from pinbench.workspace import Workspace


@dataclass(frozen=True)
class Restored:
    database: str
    blobs: int
    bytes: int
    linked: int
    copied: int
    checked: Checked
    unhashed_keys: list[str] = field(default_factory=list)
    """Keys restored from a format-1 backup, whose manifest names them without a sha256."""

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "blobs": self.blobs,
            "bytes": self.bytes,
            "linked": self.linked,
            "copied": self.copied,
            "check": self.checked.to_json(),
            "unhashed_keys": self.unhashed_keys,
        }


def restore(ws: Workspace, folder: Path) -> Restored:
    """Restore the backup in ``folder`` into ``ws`` (empty); see the module's text."""
    from pinbench.artifacts.s3store import S3BlobStore
    from pinbench.db.plain import sqlite_file
    from pinbench.db.upkeep import check

    home = ws.settings.home
    made_home = not home.exists()  # before anything (the checks may download) writes there
    placed: list[Path] = []
    written: list[Path] = []
    uploaded: list[Digest] = []
    remote = ws.store if isinstance(ws.store, S3BlobStore) else None
    linked = copied = 0
    try:
        manifest = check_backup(ws, folder)
        ws.store.create()
        for digest, _ in manifest.blobs if manifest.included else []:
            source = folder / "blobs" / digest[:2] / digest  # hashed by check_backup
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
        for key in manifest.keys:
            target = home / "keys" / key.name
            shutil.copyfile(folder / "keys" / key.name, target)
            written.append(target)
            target.chmod(0o600)
        if manifest.dialect == "sqlite":
            path = sqlite_file(ws.settings.database_url)
            assert path is not None  # check_backup refused anything else
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
        unhashed_keys=manifest.unhashed_keys,
    )
