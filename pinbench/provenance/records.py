"""Recorded runs against what was signed for them (issue 71: a database edit of a run's
top-1 showed in ``runs list`` while ``attest verify`` said verified and ``fsck`` no problems).

A run's attestation is made when its record is committed (decision 270), over ``results.json``:
the record as canonical JSON (``statement.results_record``). ``altered`` recomputes that JSON
from the database as it is now and compares it with the signed one: a record changed after it
was signed (by hand, by a process with the user's rights) is named with what differs. The
signature itself is ``attest verify``'s to check; this compares the rows with the bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.canonical import canonical_json

if TYPE_CHECKING:
    from pinbench.db.plain import Rows
    from pinbench.db.upkeep import Problem
    from pinbench.provenance.key_material import PublicKey
    from pinbench.workspace import Workspace

SHOWN = 3
"""How many differing fields a problem names (then how many more)."""


@dataclass(frozen=True, slots=True)
class Altered:
    """A run whose record differs from its signed ``results.json``: ``detail`` says how."""

    run_id: str
    detail: str


def _signed_results(payload: bytes) -> str | None:
    """The sha256 of the ``results.json`` subject of a statement's payload, if it has one."""
    from pinbench.provenance.statement import RESULTS

    try:
        statement = json.loads(payload)
    except ValueError:
        return None
    for entry in statement.get("subject") or [] if isinstance(statement, dict) else []:
        if isinstance(entry, dict) and entry.get("name") == RESULTS:
            digest = entry.get("digest")
            sha = digest.get("sha256") if isinstance(digest, dict) else None
            return sha if isinstance(sha, str) else None
    return None


def _differences(recorded: dict[str, Any], signed: dict[str, Any]) -> list[str]:
    found = []
    metrics_now, metrics_then = recorded.get("metrics", {}), signed.get("metrics", {})
    for name in sorted(set(metrics_now) | set(metrics_then)):
        now, then = metrics_now.get(name), metrics_then.get(name)
        if now != then:
            found.append(f"metric {name}: {now!r} recorded, {then!r} signed")
    for key in sorted(set(recorded) | set(signed)):
        now, then = recorded.get(key), signed.get(key)
        if key == "metrics" or now == then:
            continue
        if len(repr(now)) + len(repr(then)) <= SHORT:  # a time, a name, a version: both shown
            found.append(f"{key}: {now!r} recorded, {then!r} signed")
        else:
            found.append(f"{key} differs from what was signed")
    return found


SHORT = 160
"""A differing field whose two values together print in at most this many characters is named
with both (``started_at``, ``model``, ``submitted_by``); a longer one (``details``) by name."""


def predicate_columns(payload: bytes) -> dict[str, Any]:
    """What a statement's predicate signed of a run's columns, in ``results.json``'s names:
    its start and finish (``runDetails.metadata``) and its host facts (the run's byproduct);
    an attestation made before ``results.json`` held them signed them there."""
    try:
        statement = json.loads(payload)
        details = statement["predicate"]["runDetails"]
        meta = details["metadata"]
        (run,) = [b for b in details["byproducts"] if b.get("name") == "run"]
        return {
            "started_at": meta["startedOn"],
            "finished_at": meta["finishedOn"],
            "host": run["annotations"]["host"],
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def differs(
    rows: Rows,
    run_id: str,
    signed_sha: str,
    read: Callable[[str], bytes | None],
    predicate: dict[str, Any] | None = None,
) -> str | None:
    """How run ``run_id``'s record here differs from the ``results.json`` of sha256
    ``signed_sha`` (None when it does not, or the run is not in this registry). An older
    ``results.json`` (without ``SIGNED_COLUMNS``) is compared on what it holds and on what its
    statement's ``predicate`` signed (``predicate_columns``)."""
    from pinbench.db.run_row import BadRow, read_run
    from pinbench.provenance.statement import SIGNED_COLUMNS, results_record

    try:
        run = read_run(rows, run_id)
    except BadRow as exc:
        return f"its row cannot be read: its {exc.column} {exc.reason}"
    if run is None:
        return None
    recorded = results_record(run)
    if hashlib.sha256(canonical_json(recorded)).hexdigest() == signed_sha:
        return None
    signed_bytes = read(signed_sha)
    try:
        signed = json.loads(signed_bytes) if signed_bytes is not None else {}
    except ValueError:
        return "its signed results.json is not JSON"
    if not isinstance(signed, dict):
        return "its signed results.json is not a JSON object"
    if signed and not set(SIGNED_COLUMNS) <= set(signed):
        # signed before these columns were: what it and its predicate hold is compared
        signed = {**(predicate or {}), **signed}
        recorded = {k: v for k, v in recorded.items() if k in signed}
        if canonical_json(recorded) == canonical_json(signed):
            return None
    diffs = _differences(recorded, signed) or ["its record differs"]
    more = f" and {len(diffs) - SHOWN} more" if len(diffs) > SHOWN else ""
    return "changed after it was signed: " + "; ".join(diffs[:SHOWN]) + more


UNATTESTED = (
    "finished and not attested: its record is signed by nothing (an attestation's row removed "
    "leaves a run so); `pinbench runs attest` would sign the record as it is now"
)


def altered(
    rows: Rows, read: Callable[[str], bytes | None], keys: list[PublicKey] | None = None
) -> list[Altered]:
    """Every run whose newest attestation's ``results.json`` is not its record now, whose
    attestation is not signed by one of ``keys`` (the registry's: given, each envelope's
    signature is checked), or that finished and has no attestation (``UNATTESTED``). ``read``
    gives a blob's bytes by sha256 (None when the store lacks it: ``fsck`` reports that
    apart)."""
    from pinbench.provenance.dsse import BadEnvelope, read_envelopes

    newest: dict[str, str] = {}
    attested = rows("SELECT run_id, envelope_sha256 FROM attestations ORDER BY created_at, id", {})
    for run_id, sha256 in attested:
        newest[str(run_id)] = str(sha256)
    found = [
        Altered(str(run_id), UNATTESTED)
        for (run_id,) in rows(
            "SELECT id FROM runs WHERE status IN ('succeeded', 'failed') "
            "AND id NOT IN (SELECT run_id FROM attestations) ORDER BY id",
            {},
        )
    ]
    for run_id, envelope_sha256 in sorted(newest.items()):
        data = read(envelope_sha256)
        if data is None:
            continue
        try:
            (envelope,) = read_envelopes(data, source="attestation")
        except (BadEnvelope, ValueError):
            found.append(Altered(run_id, "its attestation is not one readable DSSE envelope"))
            continue
        if keys is not None and envelope.verified_by(keys) is None:
            found.append(Altered(run_id, "its attestation is not signed by this registry's keys"))
            continue
        signed_sha = _signed_results(envelope.payload)
        said = (
            differs(rows, run_id, signed_sha, read, predicate_columns(envelope.payload))
            if signed_sha is not None
            else None
        )
        if said is not None:
            found.append(Altered(run_id, said))
    return found


def altered_problems(ws: Workspace) -> list[Problem]:
    """``fsck``'s ``record`` problems: ``altered`` over the workspace's runs, each blob read
    and checked against its name (one missing or corrupt is reported by ``fsck`` apart)."""
    from pinbench.artifacts.digest import Digest
    from pinbench.artifacts.store import BlobMissing, ChecksumMismatch
    from pinbench.db.upkeep import Problem

    def read(sha256: str) -> bytes | None:
        try:
            return ws.store.verify(Digest(sha256), label=f"blob {sha256[:12]}").read_bytes()
        except (BlobMissing, ChecksumMismatch):
            return None  # reported above as missing or corrupt

    from pinbench.provenance.keys import known_keys

    keys = known_keys(ws)
    with ws.reads() as rows:
        changed = altered(rows, read, keys)
    return [Problem("record", f"runs/{a.run_id}", a.detail) for a in changed]


def record_agrees(ws: Workspace, run_id: str, payload: bytes) -> None:
    """``attest verify`` on this registry: the run's record here must be what the attestation
    signed (a database edit of its top-1 showed in ``runs list`` while the attestation still
    verified); refused, naming what differs. A run this registry does not hold is not
    compared."""
    from pinbench.artifacts.digest import Digest
    from pinbench.artifacts.store import BlobMissing, ChecksumMismatch
    from pinbench.provenance.verify import AttestationRefused

    signed_sha = _signed_results(payload)
    if signed_sha is None:
        return

    def read(sha256: str) -> bytes | None:
        try:
            return ws.store.verify(Digest(sha256), label=f"blob {sha256[:12]}").read_bytes()
        except (BlobMissing, ChecksumMismatch):
            return None

    with ws.reads() as rows:
        said = differs(rows, run_id, signed_sha, read, predicate_columns(payload))
    if said is not None:
        raise AttestationRefused(part=f"run {run_id[:8]}'s record in this registry", reason=said)
