"""``Hosting``: a local registry as a server offers it to callers over HTTP. The REST
controllers call these and nothing beneath the API: each method takes what a request carries
(raw bytes, digests as text, the caller's user name) and answers plain data.

Methods a notebook user also wants (list, show, resolve, runs, reports, attestations) are on
``Registry``; what is here exists because a server does it for somebody else: committing a
streamed upload, storing a lockfile a client locked, serving blobs by digest, cancelling on a
user's behalf, runs in the REST shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.artifacts.store import BlobStore, StagedBlob
    from pinbench.registry.lockfile import Lockfile as LockfileBody
    from pinbench.registry.manifest import Manifest
    from pinbench.registry.manifest_parts import FileEntry
    from pinbench.registry.names import ArtifactRef
    from pinbench.registry.publish import PublishResult
    from pinbench.sdk.records import Published
    from pinbench.sdk.registry import Registry
    from pinbench.workspace import Workspace


MAX_REPORT_RUNS = 32
"""The most runs one report gathers (``reports.data.MAX_RUNS``; tests/test_sdk.py holds them
equal)."""


class NotStored(UserError):
    """A lockfile or blob this registry does not hold (HTTP 404)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class Upload(Protocol):
    """A streamed upload, staged in the blob store (``api.upload.Received``)."""

    manifest: Manifest
    checked: list[tuple[FileEntry, int]]
    staged: list[StagedBlob]


class Hosting:
    """The server-side operations of ``registry`` (a local one: ``Registry.hosting()``)."""

    def __init__(self, registry: Registry, ws: Workspace) -> None:
        self.registry = registry
        self._ws = ws

    # -- publishing by upload -------------------------------------------------------------

    @property
    def store(self) -> BlobStore:
        """The blob store an upload is staged into (on its filesystem, so that the commit is
        a rename)."""
        return self._ws.store

    def published(self, manifest: Manifest) -> Published | None:
        """This exact manifest's version when it is published already (VersionConflict when
        another manifest holds the version); None when the version is free."""
        from pinbench.registry.publish import already_published

        done = already_published(self._ws, manifest)
        return None if done is None else published_of(done)

    def commit_upload(self, upload: Upload, *, publisher: str | None) -> Published:
        """Make an upload's staged files visible and record the version (all or nothing: on
        any error the staged files are removed)."""
        from pinbench.registry.publish import commit_staged

        try:
            result = commit_staged(
                self._ws, upload.manifest, upload.checked, upload.staged, publisher=publisher
            )
        except BaseException:
            self.discard(upload)
            raise
        return published_of(result)

    def discard(self, upload: Upload) -> None:
        """Remove an upload's staged files."""
        for blob in upload.staged:
            self._ws.store.discard(blob)

    def signature(self, ref: str) -> tuple[str, bytes]:
        """A model version's model-signing bundle (``Registry.signature``) and its media
        type."""
        from pinbench.provenance.modelsig import BUNDLE_MEDIA_TYPE

        return BUNDLE_MEDIA_TYPE, self.registry.signature(ref)

    # -- lockfiles ------------------------------------------------------------------------

    def lock_request(self, data: dict[str, Any]) -> dict[str, Any]:
        """Lock a request document sent as JSON: ``artifacts`` (of the first point),
        ``points`` (``digest``, ``batch_size``, ``new`` each) and ``sweep`` (or None)."""
        from pinbench.registry import service
        from pinbench.registry.request import parse_request

        request = parse_request(data, source="(request body)")
        points = service.lock_points(self._ws, request)
        first = points[0][0]
        return {
            "artifacts": [a.ref for a in first.body.artifacts],
            "points": [
                {"digest": lock.digest.hex, "batch_size": lock.body.batch_size, "new": new}
                for lock, new in points
            ],
            "sweep": first.body.sweep if request.is_sweep else None,
        }

    def stored_lockfile(self, digest: str, *, hint: str = "") -> LockfileBody:
        """The lockfile stored under ``digest`` (NotStored, with ``hint`` after the message,
        when there is none)."""
        from pinbench.artifacts.digest import Digest
        from pinbench.registry.lockfile import Lockfile as LockfileBody

        body = self.lockfile_bytes(digest, hint=hint)
        return LockfileBody.from_bytes(body, source=f"lockfile {Digest(digest).short}")

    def lockfile_bytes(self, digest: str, *, hint: str = "") -> bytes:
        """A stored lockfile's canonical bytes."""
        from pinbench.artifacts.digest import Digest
        from pinbench.db.models import Lockfile as LockfileRow

        d = Digest(digest)
        with self._ws.transaction() as session:
            row = session.get(LockfileRow, d.hex)
            if row is None:
                raise NotStored(f"no lockfile {d.hex} is stored here{hint}")
            return row.body.encode()

    def store_lockfile(self, body: bytes, digest: str) -> tuple[LockfileBody, bool]:
        """Store a lockfile a client sent, only when this registry re-derives it byte for
        byte from the manifests it pins; (the lockfile, whether it was new)."""
        from pinbench.artifacts.digest import Digest
        from pinbench.registry.lockfile import Lockfile as LockfileBody
        from pinbench.registry.locking import store_lockfile
        from pinbench.registry.trust import rederive

        expected = Digest(digest)
        lock = LockfileBody.from_bytes(body, source="(request body)")
        if lock.digest != expected:
            raise UserError(
                f"the body's sha256 is {lock.digest.hex}, not {expected.hex} as in the URL"
            )
        from pinbench.db.plain import connection_rows

        with self._ws.transaction() as session:
            rederive(connection_rows(session), lock)
            return lock, store_lockfile(session, lock)

    # -- blobs ----------------------------------------------------------------------------

    def blob(self, digest: str) -> Path:
        """A blob's file in the store, its bytes checked against its sha256 first."""
        from pinbench.artifacts.digest import Digest

        d = Digest(digest)
        return self._ws.store.verify(d, label=f"blob {d.hex}")

    def blob_url(self, digest: str) -> str | None:
        """Where a client fetches a blob straight from object storage (a presigned GET URL,
        the client checking the sha256); None when the blobs are in the home's folder."""
        from pinbench.artifacts.digest import Digest
        from pinbench.artifacts.s3store import S3BlobStore

        store = self._ws.store
        if not isinstance(store, S3BlobStore):
            return None
        d = Digest(digest)
        return store.presigned(d, label=f"blob {d.hex}")

    # -- listings -------------------------------------------------------------------------

    def artifact_page(
        self,
        kind: str | None,
        name: str | None,
        contains: str | None,
        after: ArtifactRef | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        """A page of published versions (the REST shape), past ``after`` (keyset paging in
        SQL: ``catalog.version_page``)."""
        from pinbench.registry import catalog
        from pinbench.registry.names import parse_kind

        parsed = parse_kind(kind) if kind else None
        found = catalog.version_page(self._ws, parsed, name, contains, after, limit)
        return [s.to_json() for s in found]

    # -- runs -----------------------------------------------------------------------------

    def run_views(
        self,
        limit: int | None,
        where: Mapping[str, str | None] | None = None,
        after: str | None = None,
    ) -> list[dict[str, Any]]:
        """Recorded runs, newest first, metrics under ``metrics`` (the REST shape); ``where``
        the filter's words as a caller sent them (refused when one is not a filter's value),
        ``after`` the run whose next page this is."""
        from pinbench.evaluator.records.run_filter import RunFilter
        from pinbench.evaluator.records.run_list import list_runs

        filtered = RunFilter.parse(where or {})
        return list_runs(self._ws, limit, nested=True, where=filtered, after=after)

    def run_view(self, run_id: str) -> dict[str, Any]:
        """One run with its host, details and units, metrics under ``metrics``."""
        from pinbench.evaluator.records.run_view import show_run

        return show_run(self._ws, run_id, nested=True)

    def compare(self, run_ids: Sequence[str]) -> dict[str, Any]:
        """Runs side by side (``Registry.compare``)."""
        from pinbench.evaluator.records.run_compare import compare_runs

        return compare_runs(self._ws, list(run_ids))

    def cancel(self, run_id: str, *, user: str, admin: bool) -> tuple[str, str, str]:
        """Cancel on ``user``'s behalf (their own runs; an admin any): the run's full id, its
        status now (``cancelled``, or ``running`` until its server stops it) and the reason
        recorded. (``Registry.cancel`` is the operator's, for any run.)"""
        from pinbench.evaluator.cancel import Canceller, request_cancel

        by = Canceller(user, admin=admin)
        full_id, status = request_cancel(self._ws, run_id, by)
        return full_id, status, by.reason()

    # -- systems --------------------------------------------------------------------------

    def refresh_systems(self, cluster: str) -> dict[str, bool]:
        """Ray's answer on each system of the cluster at address ``cluster`` (their facts
        refreshed in the systems table): alive or not, by name."""
        from pinbench.cluster.ray_agent import cluster_systems
        from pinbench.cluster.systems import record

        alive = {}
        for found in cluster_systems(cluster):
            alive[found.name] = found.alive
            if found.facts is not None:
                record(self._ws, found.name, found.facts, found.node_id)
        return alive

    def systems(self, alive: dict[str, bool] | None) -> list[dict[str, Any]]:
        """Every registered system: hardware facts, alive (from ``alive``), runs done."""
        from pinbench.cluster.systems import list_systems

        return [row.to_json() for row in list_systems(self._ws, alive)]

    def system(self, name: str, alive: dict[str, bool] | None) -> dict[str, Any]:
        """One system as its agent reported it."""
        from pinbench.cluster.systems import show_system

        return show_system(self._ws, name, alive).to_json()

    # -- provenance -----------------------------------------------------------------------

    def signing_keys(self) -> list[dict[str, Any]]:
        """Every signing key this registry records (public parts), oldest first."""
        from pinbench.provenance.keys import key_records

        return [k.to_json() for k in key_records(self._ws)]

    def recorded_attestation(self, run_id: str) -> bytes | None:
        """A run's newest recorded attestation (one DSSE line), or None."""
        from pinbench.provenance.attest import recorded_attestation

        return recorded_attestation(self._ws, run_id)

    # -- reports --------------------------------------------------------------------------

    def report(self, run_ids: Sequence[str], fmt: str) -> tuple[str, bytes, str]:
        """A report: (media type, body, the first run's id)."""
        from pinbench import reports

        media, make = reports.renderer(fmt)
        report = reports.gather(self._ws, list(run_ids))
        return media, make(report), report.ids[0]

    @staticmethod
    def report_policy() -> str:
        """The Content-Security-Policy under which an HTML report's inline scripts run (by
        their hashes)."""
        from pinbench.reports.render import policy

        return policy()


def published_of(result: PublishResult) -> Published:
    """The API's record of a publish."""
    from pinbench.sdk.records import Published

    return Published(
        ref=str(result.ref),
        manifest_digest=result.manifest_digest.hex,
        created=result.created,
        files=result.files,
        bytes=result.bytes,
        new_blobs=result.new_blobs,
    )
