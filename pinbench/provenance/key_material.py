"""Keys as data: a public key and its id, a key's record, PEM, and the secret of each purpose
(Ed25519 for attestations, EC P-256 for model signatures) with the public half it gives."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from pinbench.errors import SystemFailure, UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )


ALGORITHM = "ed25519"
KEY_FILE = "signing.ed25519"
ATTESTATION: Final = "attestation"
MODEL_SIGNING: Final = "model-signing"
PURPOSES: Final = (ATTESTATION, MODEL_SIGNING)
SECRET_BYTES = 32


class BadKey(UserError):
    """A key that cannot be used: unreadable, unsafe, or not an Ed25519 public key."""

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason


class KeyFileRefused(SystemFailure):
    """This registry's own key file is missing, unsafe, or not the key it recorded."""

    def __init__(self, *, purpose: str, reason: str) -> None:
        super().__init__(f"{purpose} key file keys/{_FILES[purpose]} (in PINBENCH_HOME) {reason}")
        self.purpose = purpose
        self.reason = reason


class UnknownKey(UserError):
    def __init__(self, *, keyid: str, reason: str) -> None:
        super().__init__(f"key {keyid[:64]!r}: {reason}")
        self.keyid = keyid
        self.reason = reason


_FILES: Final = {ATTESTATION: KEY_FILE, MODEL_SIGNING: "model-signing.p256"}
_ALGORITHMS: Final = {ATTESTATION: ALGORITHM, MODEL_SIGNING: "ecdsa-p256"}
_KINDS: Final = {ATTESTATION: "Ed25519", MODEL_SIGNING: "EC P-256"}


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key by its raw bytes; ``keyid`` is their sha256 (hex).
    ``retired_at``: when it stopped signing (it verifies only what was attested before)."""

    raw: bytes
    owner: str = ""
    retired_at: datetime | None = None

    @property
    def keyid(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    @property
    def hex(self) -> str:
        return self.raw.hex()

    def crypto(self) -> Ed25519PublicKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        return Ed25519PublicKey.from_public_bytes(self.raw)

    def pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        return (
            self.crypto()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "keyid": self.keyid,
            "algorithm": ALGORITHM,
            "public": self.hex,
            "owner": self.owner,
        }


@dataclass(frozen=True)
class KeyRecord:
    """One row of ``signing_keys``, as ``keys list`` and ``/api/v1/keys`` show it."""

    keyid: str
    purpose: str
    algorithm: str
    public: str
    owner: str
    created_at: datetime
    retired_at: datetime | None

    @property
    def state(self) -> str:
        return "active" if self.retired_at is None else "retired"

    @property
    def kind(self) -> str:
        """What it signs and with what, in words: ``attestation (Ed25519)``."""
        return f"{self.purpose} ({_KINDS.get(self.purpose, self.algorithm)})"

    def pem(self) -> str:
        return public_pem(self.purpose, self.public)

    def attestation_key(self) -> PublicKey:
        return PublicKey(bytes.fromhex(self.public), self.owner, self.retired_at)

    def to_json(self) -> dict[str, Any]:
        return {
            "keyid": self.keyid,
            "purpose": self.purpose,
            "algorithm": self.algorithm,
            "state": self.state,
            "created_at": iso(self.created_at),
            "retired_at": iso(self.retired_at) if self.retired_at else None,
            "public": self.public,
            "pem": self.pem(),
            "owner": self.owner,
        }


def utc(value: datetime) -> datetime:
    """A database time as an aware UTC time (SQLite returns them naive)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def iso(value: datetime) -> str:
    return utc(value).isoformat()


def public_pem(purpose: str, public_hex: str) -> str:
    """The PEM (SubjectPublicKeyInfo) of a recorded public key."""
    from cryptography.hazmat.primitives import serialization

    raw = bytes.fromhex(public_hex)
    if purpose == ATTESTATION:
        return PublicKey(raw).pem()
    key = serialization.load_der_public_key(raw)
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


# ---------------------------------------------------------------- secrets of each purpose


def _new_secret(purpose: str) -> bytes:
    if purpose == ATTESTATION:
        return secrets.token_bytes(SECRET_BYTES)
    from cryptography.hazmat.primitives.asymmetric import ec

    scalar = ec.generate_private_key(ec.SECP256R1()).private_numbers().private_value
    return scalar.to_bytes(SECRET_BYTES, "big")


def _ed25519(seed: bytes) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(seed)


def _p256(scalar: bytes) -> EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.derive_private_key(int.from_bytes(scalar, "big"), ec.SECP256R1())


def _public_of(purpose: str, secret: bytes) -> tuple[str, str]:
    """(key id, public key hex) of a private key's bytes."""
    from cryptography.hazmat.primitives import serialization

    if purpose == ATTESTATION:
        key = public_of(_ed25519(secret))
        return key.keyid, key.hex
    public = _p256(secret).public_key()
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(pem).hexdigest(), der.hex()


def _checked_public(purpose: str, secret: bytes) -> tuple[str, str]:
    try:
        return _public_of(purpose, secret)
    except ValueError:  # a P-256 scalar of 0 or past the curve's order
        raise KeyFileRefused(
            purpose=purpose, reason=f"does not hold a {_KINDS[purpose]} private key"
        ) from None


def public_of(private: Ed25519PrivateKey, *, owner: str = "") -> PublicKey:
    from cryptography.hazmat.primitives import serialization

    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return PublicKey(raw, owner)


def find_key(records: list[KeyRecord], keyid: str) -> KeyRecord:
    """The one record whose key id starts with ``keyid`` (at least 8 hex digits)."""
    wanted = keyid.strip().lower()
    if len(wanted) < 8 or any(c not in "0123456789abcdef" for c in wanted):
        raise UnknownKey(keyid=keyid, reason="give at least 8 hex digits of a key id")
    found = [r for r in records if r.keyid.startswith(wanted)]
    if not found:
        raise UnknownKey(keyid=keyid, reason="no key of this registry has that id (keys list)")
    if len(found) > 1:
        raise UnknownKey(keyid=keyid, reason=f"matches {len(found)} keys: give more digits")
    return found[0]


def parse_public(text: str, *, source: str) -> PublicKey:
    """A public key from a PEM (SubjectPublicKeyInfo) or 64 hex digits (the raw key, as
    ``keys list`` and ``/api/v1/keys`` show it)."""
    text = text.strip()
    if len(text) == 64 and all(c in "0123456789abcdef" for c in text.lower()):
        return PublicKey(bytes.fromhex(text))
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        loaded = serialization.load_pem_public_key(text.encode())
    except ValueError as exc:
        raise BadKey(what=source, reason=f"not a PEM public key or 64 hex digits ({exc})") from None
    if not isinstance(loaded, Ed25519PublicKey):
        raise BadKey(what=source, reason=f"not an Ed25519 key ({type(loaded).__name__})")
    raw = loaded.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return PublicKey(raw)
