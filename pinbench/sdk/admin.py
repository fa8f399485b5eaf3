"""``Admin``: what an operator does to a local registry's home and database
(``Registry.admin()``): create it with its signing keys, migrate its schema, check it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from types import ModuleType

    from pinbench.artifacts.copies import Evicted
    from pinbench.artifacts.scratch import Reclaimed
    from pinbench.db.backup import BackedUp
    from pinbench.db.restore import Restored
    from pinbench.db.upkeep import Checked, Collected
    from pinbench.evaluator.records.retention import Deleted
    from pinbench.sdk.registry import Registry
    from pinbench.workspace import Workspace


class Admin:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def _ws(self, operation: str) -> Workspace:
        return self.registry._local(operation)

    def init(self) -> dict[str, Any]:
        """Create the home: the blob store, a database at the current schema, and the signing
        keys (made once; on a home that has keys they are checked, never replaced): ``home``,
        ``database`` (its URL, password hidden), ``revision``, ``signing_key``,
        ``model_signing_key``."""
        from pinbench.provenance.key_material import ATTESTATION, MODEL_SIGNING
        from pinbench.provenance.keys import ensure_keys

        ws = self._ws("init")
        revision = ws.init()
        keys = ensure_keys(ws)
        return {
            "home": str(ws.settings.home),
            "database": _safe_url(ws),
            "revision": revision,
            "signing_key": keys[ATTESTATION],
            "model_signing_key": keys[MODEL_SIGNING],
        }

    def upgrade(self) -> tuple[str | None, str]:
        """Migrate the database to the newest schema revision: (before, after)."""
        from pinbench.db import schema as db_schema

        ws = self._ws("db upgrade")
        ws.settings.home.mkdir(parents=True, exist_ok=True)
        before = db_schema.current_revision(ws.engine)
        _migrate().upgrade(ws.engine)
        after = db_schema.current_revision(ws.engine)
        assert after is not None
        return before, after

    def revisions(self) -> dict[str, str | None]:
        """The database's schema revision (``current``; None when empty) and the one this
        pinbench needs (``head``)."""
        from pinbench.db import schema as db_schema

        ws = self._ws("db current")
        return {"current": db_schema.current_revision(ws.engine), "head": db_schema.HEAD_REVISION}

    def check(self) -> None:
        """Refuse a database that is not at the head revision or differs from the models."""
        from pinbench.db import schema as db_schema

        ws = self._ws("db check")
        db_schema.ensure_current(ws.engine)
        diff = _migrate().schema_diff(ws.engine)
        if diff:
            raise UserError(f"the database schema differs from the models: {diff}")

    def reclaim_scratch(self) -> Reclaimed:
        """Remove scratch (staged publishes, uploads, fetches, run folders) that processes
        which died left in the home's ``tmp``; a live process's, on any host, is never
        touched."""
        from pinbench.artifacts.scratch import reclaim_each

        return reclaim_each(self._ws("gc").store.scratch_folders())

    def check_store(self) -> Checked:
        """``pinbench fsck``: hash every blob and compare the store with the rows that
        reference it (``db.upkeep.check``): missing, corrupt, unreferenced and stray files; and
        every run's record with the results signed for it (``provenance.records``)."""
        from pinbench.db.upkeep import check
        from pinbench.provenance.records import altered_problems

        ws = self._ws("fsck")
        checked = check(ws)
        checked.problems.extend(altered_problems(ws))
        return checked

    def collect_blobs(self, *, grace: str = "1h", delete: bool = False) -> Collected:
        """``pinbench gc --blobs``: the blobs no row references, stored longer ago than
        ``grace`` (``30m``, ``1h``, ``2d``; seconds without a unit); removed only when
        ``delete`` (``db.upkeep.collect``)."""
        from pinbench.db.upkeep import collect, duration_s

        grace_s = duration_s(grace)
        return collect(self._ws("gc --blobs"), grace_s=grace_s, delete=delete)

    def evict_cache(self, *, keep: str | None = None) -> Evicted:
        """``pinbench gc --cache``: with the blobs in object storage, remove this machine's
        local copies of them, least recently used first, until their bytes are within
        ``keep`` (``20G``, ``500M``, ``0``; unset: ``PINBENCH_CACHE_MAX``), leaving those a
        run holds (``artifacts.copies``). Refused for a home's own folder: it is the store."""
        from pinbench.artifacts.copies import InvalidKeepSize, cache_size
        from pinbench.artifacts.s3store import S3BlobStore

        limit = None if keep is None else cache_size(keep, error=InvalidKeepSize)
        store = self._ws("gc --cache").store
        if not isinstance(store, S3BlobStore):
            raise UserError(
                f"this home's blobs are kept in {store.blobs}, which is the blob store itself,"
                " not a cache: nothing to evict (--cache is for a store on object storage,"
                " PINBENCH_BLOBS=s3://...)"
            )
        return store.copies.evict(store.copies.max_bytes if limit is None else limit, recent_s=0.0)

    def delete_runs(self, run_ids: Sequence[str], *, delete: bool = False) -> Deleted:
        """``pinbench runs delete``: the runs named (ids or unique prefixes), their rows
        removed when ``delete`` (else a dry run), all or none; a queued or running one
        refuses the lot. Their blobs stay until ``collect_blobs`` (decision 149)."""
        from pinbench.evaluator.records.retention import delete_runs

        return delete_runs(self._ws("runs delete"), list(run_ids), delete=delete)

    def prune_runs(self, *, keep_days: float, keep_last: int, delete: bool = False) -> Deleted:
        """``pinbench runs prune``: every finished run that started ``keep_days`` days ago or
        more and is not among the ``keep_last`` most recent finished runs of its lockfile;
        removed when ``delete`` (else a dry run)."""
        from pinbench.evaluator.records.retention import prune_runs

        return prune_runs(
            self._ws("runs prune"), keep_days=keep_days, keep_last=keep_last, delete=delete
        )

    def backup(
        self, folder: Path, *, blobs: bool = True, say: Callable[[str], None] | None = None
    ) -> BackedUp:
        """``pinbench backup``: a consistent snapshot of the database (SQLite's backup API,
        or ``pg_dump``) taken first, then every blob it references (copies, never hard
        links; with the blobs in object storage, the bucket's bytes;
        none when not ``blobs``) with their manifest and the signing keys, each hashed as
        taken, into ``folder`` (absent or empty, outside the home and the blob store). A
        failure (a blob missing or damaged included) leaves nothing. ``say``: progress."""
        from pinbench.db.backup import backup

        return backup(self._ws("backup"), folder, blobs=blobs, say=say)

    def restore(self, folder: Path) -> Restored:
        """``pinbench restore``: a backup into this empty home and database; every file it
        holds is hashed, and the database's references checked, before anything is written
        (``db.backup_check``); ends with ``check_store``'s findings."""
        from pinbench.db.restore import restore

        return restore(self._ws("restore"), folder)

    def prepare_to_serve(self, stopped: str, not_started: str) -> tuple[list[str], Reclaimed]:
        """Before a server starts on this home: the database must be at the current schema;
        the run records dead processes left waiting for the database are written; runs of
        servers that stopped are marked interrupted (``stopped``: the reason for a run that
        was running, ``not_started`` for a queued one; never a live server's), and dead
        processes' scratch reclaimed. (What was done, a sentence each; what was reclaimed.)"""
        from pinbench.artifacts.scratch import reclaim_each
        from pinbench.db import schema as db_schema
        from pinbench.evaluator.instances import abandon_expired
        from pinbench.evaluator.run import record_left

        ws = self._ws("serve")
        ws.settings.home.mkdir(parents=True, exist_ok=True)
        db_schema.ensure_current(ws.engine)
        done = []
        if recorded := record_left(ws):
            done.append(f"recorded {recorded} run(s) whose records waited for the database")
        if abandoned := abandon_expired(ws, stopped, queued_reason=not_started):
            done.append(f"marked {abandoned} run(s) of servers that stopped interrupted")
        return done, reclaim_each(ws.store.scratch_folders())

    def scopes_of(self, token: str) -> frozenset[str]:
        """The scopes a token (its secret text) grants; refused when it is unknown or
        revoked."""
        from pinbench.api_tokens import authenticate

        with self._ws("checking a token").reads() as rows:
            return frozenset(authenticate(rows, token).scopes)


def _migrate() -> ModuleType:
    """Alembic is imported only by the operations that need it (a tenth of a second saved)."""
    import importlib

    return importlib.import_module("pinbench.db.migrate")


def _safe_url(ws: Workspace) -> str:
    from sqlalchemy.engine import make_url

    return make_url(ws.settings.database_url).render_as_string(hide_password=True)
