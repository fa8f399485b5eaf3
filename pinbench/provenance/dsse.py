"""DSSE envelopes (https://github.com/secure-systems-lab/dsse, protocol v1): the signature is
over PAE(payloadType, payload), never over the JSON it travels in.

An envelope is JSON ``{"payloadType", "payload" (base64), "signatures": [{"keyid", "sig"}]}``;
an attestation file (``.intoto.jsonl``) holds one envelope per line.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from pinbench.provenance.key_material import PublicKey

IN_TOTO = "application/vnd.in-toto+json"
MAX_ENVELOPE = 64 * 1024 * 1024
"""An envelope read from a file or a server is refused beyond this size (64 MiB)."""


class BadEnvelope(UserError):
    """Not a DSSE envelope pinbench can check: ``part`` names what is wrong."""

    def __init__(self, *, part: str, reason: str) -> None:
        super().__init__(f"{part}: {reason}")
        self.part = part
        self.reason = reason


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]
    """(keyid, signature) pairs."""

    def to_json(self) -> dict[str, Any]:
        return {
            "payloadType": self.payload_type,
            "payload": base64.b64encode(self.payload).decode(),
            "signatures": [
                {"keyid": keyid, "sig": base64.b64encode(sig).decode()}
                for keyid, sig in self.signatures
            ],
        }

    def line(self) -> bytes:
        """One line of an ``.intoto.jsonl`` file (newline included)."""
        return json.dumps(self.to_json(), separators=(",", ":")).encode() + b"\n"

    def verified_by(self, keys: list[PublicKey]) -> PublicKey | None:
        """The first of ``keys`` whose signature (matched by key id) verifies, else None."""
        from cryptography.exceptions import InvalidSignature

        message = pae(self.payload_type, self.payload)
        for keyid, sig in self.signatures:
            for key in keys:
                if key.keyid != keyid:
                    continue
                try:
                    key.crypto().verify(sig, message)
                except InvalidSignature:
                    continue
                return key
        return None


def sign(payload: bytes, private: Ed25519PrivateKey, keyid: str, kind: str = IN_TOTO) -> Envelope:
    return Envelope(kind, payload, ((keyid, private.sign(pae(kind, payload))),))


def parse_envelope(data: object, *, source: str) -> Envelope:
    """An envelope from decoded JSON, every part checked for shape (not for signatures)."""
    if not isinstance(data, dict):
        raise BadEnvelope(part=source, reason="not a JSON object (one DSSE envelope per line)")
    kind, payload, sigs = data.get("payloadType"), data.get("payload"), data.get("signatures")
    if not isinstance(kind, str) or not isinstance(payload, str):
        raise BadEnvelope(part=source, reason="payloadType and payload must be strings")
    if not isinstance(sigs, list) or not sigs:
        raise BadEnvelope(part=f"{source} signatures", reason="there are none")
    pairs = []
    for i, entry in enumerate(sigs):
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) for k in ("keyid", "sig")
        ):
            raise BadEnvelope(part=f"{source} signatures[{i}]", reason="needs keyid and sig")
        pairs.append((entry["keyid"], _b64(entry["sig"], f"{source} signatures[{i}].sig")))
    return Envelope(kind, _b64(payload, f"{source} payload"), tuple(pairs))


def read_envelopes(text: bytes, *, source: str) -> list[Envelope]:
    """Every envelope of an ``.intoto.jsonl`` file's bytes: lines end at LF (a CRLF's CR is
    dropped); each line is strict JSON (``jsonsafe``: a key given twice, which two readers
    would resolve differently, and nesting past its bound are refused)."""
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    if len(text) > MAX_ENVELOPE:
        raise BadEnvelope(part=source, reason=f"larger than {MAX_ENVELOPE} bytes")
    out = []
    for n, line in enumerate(text.split(b"\n"), 1):
        line = line.removesuffix(b"\r")
        if not line.strip():
            continue
        try:
            data = load_json(line)
        except JsonRefused as exc:
            raise BadEnvelope(part=f"{source} line {n}", reason=str(exc)) from None
        out.append(parse_envelope(data, source=f"{source} line {n}"))
    if not out:
        raise BadEnvelope(part=source, reason="holds no envelope")
    return out


def _b64(text: str, part: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadEnvelope(part=part, reason="not base64") from None
