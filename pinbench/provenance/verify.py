"""Checking an attestation without trusting whoever served it.

In order, each failure refused naming the part: the DSSE signature with the keys given (a key
file, or the keys a registry lists), the payload type, the statement's type and predicate
type, every subject's bytes hashed here against its digest, the lockfile's text hashing to the
sha256 the predicate names, the request being the lockfile's, and ``results.json`` naming the
same run and lockfile as the predicate. A key retired by ``keys rotate`` verifies only what it
attested before its retirement (the statement's signed ``attestedOn``). Every JSON inside is
read strictly (``jsonsafe``): a key given twice or nesting past the bound is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.provenance.dsse import Envelope
    from pinbench.provenance.key_material import PublicKey

BlobDigest = Callable[[str, str], "str | None"]
"""(subject name, claimed sha256) -> the sha256 of the bytes found for it, or None."""
BlobBytes = Callable[[str, str], "bytes | None"]


class AttestationRefused(UserError):
    """An attestation that does not verify; ``part`` names what failed."""

    def __init__(self, *, part: str, reason: str) -> None:
        super().__init__(f"attestation refused: {part}: {reason}")
        self.part = part
        self.reason = reason


@dataclass
class Verified:
    run: str
    lockfile: str
    keyid: str
    owner: str
    after_the_fact: bool
    status: str
    """The run's status as ``results.json`` records it (a failed run verifies too)."""
    subjects: list[str] = field(default_factory=list)
    key_retired_at: str | None = None
    """When the signing key was retired (after this attestation), or None while it is active."""

    def to_json(self) -> dict[str, Any]:
        return {
            "verified": True,
            "run": self.run,
            "lockfile": self.lockfile,
            "keyid": self.keyid,
            "owner": self.owner,
            "after_the_fact": self.after_the_fact,
            "status": self.status,
            "subjects": self.subjects,
            "key_retired_at": self.key_retired_at,
        }


def verify_envelope(
    envelope: Envelope, keys: list[PublicKey], digest_of: BlobDigest, read: BlobBytes
) -> Verified:
    from pinbench.provenance.dsse import IN_TOTO
    from pinbench.provenance.statement import RESULTS, SLSA_PROVENANCE, STATEMENT

    key = envelope.verified_by(keys)
    if key is None:
        ids = ", ".join(k[:12] for k, _ in envelope.signatures)
        known = {k.keyid for k in keys}
        why = (
            "the payload or the signature was altered (it does not verify with that key)"
            if any(k in known for k, _ in envelope.signatures)
            else f"signed by key {ids}, which is not among the keys given "
            f"({', '.join(k.keyid[:12] for k in keys) or 'none'})"
        )
        raise AttestationRefused(part="signature", reason=why)
    if envelope.payload_type != IN_TOTO:
        raise AttestationRefused(
            part="payloadType", reason=f"{envelope.payload_type!r}, not {IN_TOTO!r}"
        )
    statement = _object(envelope.payload, "payload")
    if statement.get("_type") != STATEMENT:
        raise AttestationRefused(part="_type", reason=f"not {STATEMENT}")
    if statement.get("predicateType") != SLSA_PROVENANCE:
        raise AttestationRefused(part="predicateType", reason=f"not {SLSA_PROVENANCE}")
    predicate = _dict(statement, "predicate")
    build = _dict(predicate, "buildDefinition")
    internal = build.get("internalParameters")
    internal = internal if isinstance(internal, dict) else {}
    retired = _retired(key, internal.get("attestedOn"))
    run_details = _dict(predicate, "runDetails")
    external = _dict(build, "externalParameters")
    lock = _dict(external, "lockfile")
    body, claimed = lock.get("body"), lock.get("sha256")
    if not isinstance(body, str) or not isinstance(claimed, str):
        raise AttestationRefused(part="lockfile", reason="needs body (text) and sha256")
    actual = hashlib.sha256(body.encode()).hexdigest()
    if actual != claimed:
        raise AttestationRefused(
            part="lockfile",
            reason=f"its body hashes to {actual[:12]}, not to {claimed[:12]}, the id it claims",
        )
    if _object(body.encode(), "lockfile body").get("request") != external.get("request"):
        raise AttestationRefused(part="request", reason="is not the lockfile's request")
    run_id = str(_dict(run_details, "metadata").get("invocationId"))
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise AttestationRefused(part="subject", reason="there are none")
    names, status = [], "?"
    for entry in subjects:
        name, sha = _subject(entry)
        found = digest_of(name, sha)
        if found is None:
            raise AttestationRefused(part=f"subject {name}", reason="its bytes are not found")
        if found != sha:
            raise AttestationRefused(
                part=f"subject {name}",
                reason=f"its bytes hash to {found[:12]}, not {sha[:12]} (altered)",
            )
        names.append(name)
        if name == RESULTS:
            record = _object(read(name, sha) or b"", RESULTS)
            if record.get("run") != run_id or record.get("lockfile") != claimed:
                raise AttestationRefused(
                    part=f"subject {RESULTS}",
                    reason="names another run or lockfile than the predicate",
                )
            status = str(record.get("status"))
    if RESULTS not in names:
        raise AttestationRefused(part="subject", reason=f"has no {RESULTS}")
    after = internal.get("attested") == "after the fact"
    return Verified(run_id, claimed, key.keyid, key.owner, after, status, names, retired)


def _retired(key: PublicKey, attested_on: object) -> str | None:
    """The key's retirement time (ISO) when it signed before it; refused when it signed at or
    after it (or says no time): a retired key verifies only what it signed while active."""
    if key.retired_at is None:
        return None
    retired = key.retired_at if key.retired_at.tzinfo else key.retired_at.replace(tzinfo=UTC)
    when = _time(attested_on)
    if when is None or when >= retired:
        said = f"attested on {attested_on}" if when is not None else "with no attestedOn time"
        raise AttestationRefused(
            part="signature",
            reason=f"signed by key {key.keyid[:12]}, retired on {retired.isoformat()}, "
            f"{said}: a retired key verifies only what it attested before its retirement",
        )
    return retired.isoformat()


def _time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _object(data: bytes, part: str) -> dict[str, Any]:
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    try:
        parsed = load_json(data)
    except JsonRefused as exc:
        raise AttestationRefused(part=part, reason=str(exc)) from None
    if not isinstance(parsed, dict):
        raise AttestationRefused(part=part, reason="not a JSON object")
    return parsed


def _dict(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise AttestationRefused(part=key, reason="missing or not an object")
    return value


def _subject(entry: object) -> tuple[str, str]:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise AttestationRefused(part="subject", reason="an entry has no name")
    digest = entry.get("digest")
    sha = digest.get("sha256") if isinstance(digest, dict) else None
    if not isinstance(sha, str) or len(sha) != 64:
        raise AttestationRefused(part=f"subject {entry['name']}", reason="no sha256 digest")
    return entry["name"], sha
