"""Checking and collecting the blob store against the rows that reference it (decision 144).

*Referenced* blobs are those a row names: an artifact's files, a run's latencies, trace and
the blobs its details record (outputs, weights, token times, post-processing times, an
optimized graph: the paths the host lists, ``artifacts.blob_keys.RUN_BLOBS``; no key names a blob
by its name alone), an attestation's envelope and the subjects its signed statement names
(``results.json``).

``check`` (``pinbench fsck``): every referenced blob is present and hashes to its name, every
blob in the store is referenced, nothing else lies among the blobs, and every run's filter
facet names its columns (decision 158). ``collect``
(``pinbench gc --blobs``): the unreferenced blobs older than a grace period, removed only when
asked. Both read the references and list the blobs under the store's write lock
(``BlobStore.locked``), which a publish holds from making its blobs visible until its rows are
written, so a publish in flight never looks unreferenced; a run writes its blobs before its
row, unlocked, which the grace period covers (a run records its blobs and its row together
at its end; writing a blob the store has touches it, ``BlobStore.touch``). A run whose record
waits for the database (``db.pending``) holds its blobs: they count as referenced until the
record is written (decision 190).

With the blobs in object storage, ``check`` hashes the bucket's bytes as they stream by and
keeps none of them (``BlobStore.check``), and both look at the multipart uploads left
incomplete under the prefix (a process killed mid-upload: the bucket keeps, and bills, their
parts): ``check`` reports each, ``collect`` aborts those begun longer ago than the grace
period (decision 210).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.blob_keys import blobs_in
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import BlobMissing, ChecksumMismatch
from pinbench.bounds import GC_GRACE_S
from pinbench.db.facets import misfiled
from pinbench.db.pending import kept
from pinbench.errors import InvalidValue

if TYPE_CHECKING:
    from pinbench.artifacts.store import BlobStore, Stored
    from pinbench.db.plain import Rows
    from pinbench.workspace import Workspace

_HEX = re.compile(r"[0-9a-f]{64}")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}


class InvalidDuration(InvalidValue):
    what = "duration"


def duration_s(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``1h``, ``2d`` (or ``1.5h``) in seconds, within
    ``bounds.GC_GRACE_S``."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise InvalidDuration(
            text=text, reason="expected a number with an optional unit s, m, h or d (e.g. 1h)"
        )
    seconds = float(found.group(1)) * _UNIT_S[found.group(2)]
    if not GC_GRACE_S.holds(seconds):
        raise InvalidDuration(text=text, reason=GC_GRACE_S.refusal("the grace period (s)", seconds))
    return seconds


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the store: ``kind`` is ``missing`` (referenced, absent),
    ``corrupt`` (its bytes hash to another digest), ``unreferenced`` (no row names it) or
    ``stray`` (a file among the blobs that is not named by a digest), ``upload`` (a multipart
    upload into the bucket never completed nor aborted: its path is the key it would make);
    and in the database, ``facet`` (a run whose ``run_facets`` row does not name its columns:
    its path is ``runs/ID``) and ``record`` (a run whose record differs from the results
    signed for it: ``provenance.records``)."""

    kind: str
    path: str
    """The blob's (or stray file's) path under the home's ``blobs``."""
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "path": self.path, "detail": self.detail}


@dataclass
class Checked:
    """What ``check`` found: how many blobs and bytes it hashed, and the problems."""

    blobs: int = 0
    bytes: int = 0
    problems: list[Problem] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "blobs": self.blobs,
            "bytes": self.bytes,
            "problems": [p.to_json() for p in self.problems],
        }


@dataclass(frozen=True, slots=True)
class Garbage:
    """An unreferenced blob: its digest, size and age (seconds since it was stored)."""

    digest: str
    size: int
    age_s: float


@dataclass(frozen=True, slots=True)
class StaleUpload:
    """An incomplete multipart upload: the blob path it would make, its id, the bytes its
    parts hold and its age (seconds since it began)."""

    path: str
    upload_id: str
    size: int
    age_s: float


@dataclass
class Collected:
    """What ``collect`` found (``removed``: whether it removed them) and kept for the grace."""

    garbage: list[Garbage] = field(default_factory=list)
    removed: bool = False
    young: int = 0
    """Unreferenced blobs left alone: younger than the grace period."""
    uploads: list[StaleUpload] = field(default_factory=list)
    """Incomplete multipart uploads older than the grace period (aborted when ``removed``)."""
    young_uploads: int = 0

    @property
    def bytes(self) -> int:
        return sum(g.size for g in self.garbage)

    def to_json(self) -> dict[str, Any]:
        return {
            "blobs": [
                {"sha256": g.digest, "bytes": g.size, "age_s": g.age_s} for g in self.garbage
            ],
            "bytes": self.bytes,
            "removed": self.removed,
            "young": self.young,
            "uploads": [
                {"path": u.path, "upload_id": u.upload_id, "bytes": u.size, "age_s": u.age_s}
                for u in self.uploads
            ],
            "young_uploads": self.young_uploads,
        }


FileRow = tuple[str, str]
"""An artifact's file: its sha256 and ``KIND/NAME@VERSION:PATH``."""
RunRow = tuple[str, str | None, str | None, object]
"""A run: its id, latencies' and trace's sha256 and its details."""
AttestationRow = tuple[str, str]
"""An attestation: its run's id and its envelope's sha256."""


def references(rows: Rows, store: BlobStore) -> dict[str, str]:
    """Every referenced digest (hex) and what references it first."""
    return references_in(rows, store.local)


def held(ws: Workspace) -> dict[str, str]:
    """The blobs named by run records that wait for the database (``db.pending``). Read
    before the rows: a record's file is removed only after its row is written, so a blob is
    seen in one or the other."""
    found: dict[str, str] = {}
    for k in kept(ws):
        for digest, label in referenced([], [k.record.blob_fields()], [], ws.store.local).items():
            found.setdefault(digest, f"{label}, whose record waits for the database")
    return found


def references_in(rows: Rows, envelope: Callable[[Digest], Path]) -> dict[str, str]:
    """``references`` with the attestations' envelopes read where ``envelope`` says."""
    from pinbench.db.plain import json_value

    named = rows(
        "SELECT artifact_files.sha256, artifact_files.path, artifacts.kind, artifacts.name, "
        "artifacts.version FROM artifact_files "
        "JOIN artifacts ON artifacts.id = artifact_files.artifact_id",
        {},
    )
    files = (
        (str(sha), f"{kind}/{name}@{version}:{path}") for sha, path, kind, name, version in named
    )
    runs = (
        (str(run_id), latencies, trace, None if details is None else json_value(details))
        for run_id, latencies, trace, details in rows(
            "SELECT id, latencies_sha256, trace_sha256, details FROM runs", {}
        )
    )
    envelopes = (
        (str(run_id), str(sha256))
        for run_id, sha256 in rows("SELECT run_id, envelope_sha256 FROM attestations", {})
    )
    return referenced(files, runs, envelopes, envelope)


def referenced(
    files: Iterable[FileRow],
    runs: Iterable[RunRow],
    attestations: Iterable[AttestationRow],
    envelope: Callable[[Digest], Path],
) -> dict[str, str]:
    """``references`` of rows however read (a database, or a backup's dump before it is
    restored: ``db.dump_rows``); ``envelope`` gives where an attestation's envelope is read."""
    found: dict[str, str] = {}
    for sha256, label in files:
        found.setdefault(sha256, label)
    for run_id, latencies, trace, details in runs:
        for what, digest in (("latencies", latencies), ("trace", trace)):
            if digest:
                found.setdefault(digest, f"run {run_id} {what}")
        for key, digest in blobs_in(details):
            found.setdefault(digest, f"run {run_id} {key}")
    for run_id, sha256 in attestations:
        found.setdefault(sha256, f"run {run_id} attestation")
        for name, digest in _subjects(envelope(Digest(sha256))):
            found.setdefault(digest, f"run {run_id} attestation's {name}")
    return found


def _subjects(envelope: Path) -> list[tuple[str, str]]:
    """The subjects (name, sha256) of the statement a DSSE envelope signs; none when the
    envelope is absent or unreadable (``check`` reports that blob itself)."""
    try:
        statement = json.loads(base64.b64decode(json.loads(envelope.read_bytes())["payload"]))
        subjects = statement["subject"]
        return [
            (str(s["name"]), s["digest"]["sha256"])
            for s in subjects
            if _HEX.fullmatch(str(s.get("digest", {}).get("sha256", "")))
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def _stored(store: BlobStore) -> tuple[list[Stored], list[Stored]]:
    """The blobs in the store and the stray names among them."""
    blobs: list[Stored] = []
    strays: list[Stored] = []
    for entry in store.listing():
        (strays if entry.digest is None else blobs).append(entry)
    return blobs, strays


def _snapshot(ws: Workspace) -> tuple[dict[str, str], list[Stored], list[Stored]]:
    with ws.store.locked():
        waiting = held(ws)
        with ws.reads() as rows:
            refs = references(rows, ws.store)
            blobs, strays = _stored(ws.store)
    return waiting | refs, blobs, strays


def check(ws: Workspace) -> Checked:
    """Hash every blob (the verified-state cache not trusted) and compare with the rows."""
    refs, blobs, strays = _snapshot(ws)
    done = Checked()
    for stray in strays:
        done.problems.append(Problem("stray", stray.where, "not a blob's name"))
    present = {blob.digest for blob in blobs}
    for blob in blobs:
        digest = str(blob.digest)
        label = refs.get(digest, f"blob {digest}")
        try:
            ws.store.check(Digest(digest), label=label, rehash=True)
        except ChecksumMismatch as exc:
            done.problems.append(
                Problem("corrupt", blob.where, f"{label}: hashes to {exc.actual.hex}")
            )
        except BlobMissing:  # removed since it was listed
            present.discard(digest)
            continue
        done.blobs += 1
        done.bytes += blob.size
        if digest not in refs:
            done.problems.append(Problem("unreferenced", blob.where, "no row references it"))
    for digest, label in sorted(refs.items()):
        if digest not in present:
            where = _rel(ws.store.path(Digest(digest)), ws.store.blobs)
            done.problems.append(Problem("missing", where, f"{label}: not in the store"))
    done.problems.extend(_incomplete(ws.store))
    with ws.reads() as rows:
        wrong, count = misfiled(rows)
    for run_id in wrong:
        done.problems.append(
            Problem(
                "facet",
                f"runs/{run_id}",
                "its filter facet (run_facets) does not name its model, framework, status and"
                " system: listings filtered on two or more of them would miss it",
            )
        )
    if count > len(wrong):
        done.problems.append(
            Problem("facet", "runs", f"and {count - len(wrong):,} more runs like these")
        )
    from pinbench.db.lockfile_check import NOT_ITS_DIGEST, lockfiles_not_their_digest

    for digest in lockfiles_not_their_digest(ws):
        done.problems.append(Problem("lockfile", f"lockfiles/{digest}", NOT_ITS_DIGEST))
    return done


def collect(ws: Workspace, *, grace_s: float, delete: bool) -> Collected:
    """The unreferenced blobs stored more than ``grace_s`` seconds ago; removed (under the
    store's lock, references read again) when ``delete``, each one's time asked again just
    before: listing a large bucket takes a while, and a run on another machine (which does
    not take this one's lock) may have written it meanwhile."""
    done = Collected(removed=delete)
    with ws.store.locked():
        waiting = held(ws)
        with ws.reads() as rows:
            refs = waiting | references(rows, ws.store)
        blobs, _ = _stored(ws.store)
        now = time.time()
        for blob in blobs:
            digest = str(blob.digest)
            if digest in refs:
                continue
            age = now - blob.mtime
            if delete and age >= grace_s:  # asked again: written since it was listed?
                age = now - (ws.store.stored_at(Digest(digest)) or now)
            if age < grace_s:
                done.young += 1
                continue
            done.garbage.append(Garbage(digest, blob.size, round(age, 1)))
            if delete:
                ws.store.remove(Digest(digest))
        _abort_stale(ws.store, done, grace_s=grace_s, delete=delete)
    return done


def _incomplete(store: BlobStore) -> list[Problem]:
    """The multipart uploads left incomplete in the bucket, as problems."""
    now = time.time()
    return [
        Problem(
            "upload",
            upload.relative,
            f"a multipart upload begun {max(0.0, now - upload.initiated):,.0f} s ago and never"
            f" completed, its parts holding {upload.size:,} bytes: `gc --blobs --delete` aborts"
            " it once older than its grace period (or a lifecycle rule does)",
        )
        for upload in store.uploads()
    ]


def _abort_stale(store: BlobStore, done: Collected, *, grace_s: float, delete: bool) -> None:
    """With the blobs in object storage: the incomplete multipart uploads begun more than
    ``grace_s`` seconds ago into ``done``, aborted when ``delete``."""
    now = time.time()
    for upload in store.uploads():
        age = max(0.0, now - upload.initiated)
        if age < grace_s:
            done.young_uploads += 1
            continue
        done.uploads.append(
            StaleUpload(upload.relative, upload.upload_id, upload.size, round(age, 1))
        )
        if delete:
            store.abort(upload)


def _rel(path: Path, blobs: Path) -> str:
    try:
        return os.path.join("blobs", str(path.relative_to(blobs)))
    except ValueError:
        return str(path)
