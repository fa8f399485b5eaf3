"""Signing keys: this registry's own Ed25519 key, and the public keys it vouches for.

The private key is 32 random bytes (an Ed25519 seed) in ``HOME/keys/signing.ed25519``, 0600
in a 0700 folder, created once (``pinbench init``, or the first attestation) the way the
verified-state cache's key is; a key file others may read or write is refused, never used.
The public key is recorded in ``signing_keys`` (served at ``/api/v1/keys``) under its key id,
the sha256 of the raw public key.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    from pinbench.workspace import Workspace

ALGORITHM = "ed25519"
KEY_FILE = "signing.ed25519"


class BadKey(UserError):
    """A key that cannot be used: unreadable, unsafe, or not an Ed25519 public key."""

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key by its raw bytes; ``keyid`` is their sha256 (hex)."""

    raw: bytes
    owner: str = ""

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


def key_path(ws: Workspace) -> Path:
    return ws.settings.home / "keys" / KEY_FILE


def signing_key(ws: Workspace) -> Ed25519PrivateKey:
    """This registry's private key, created on first use and its public key recorded."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from pinbench.artifacts.verified import ensure_key, read_key

    path = key_path(ws)
    ensure_key(path)
    folder = path.parent.stat()
    if folder.st_uid != os.geteuid() or folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise BadKey(
            what=f"key folder {path.parent}",
            reason="others may write it (the key could be swapped): chmod 700 it",
        )
    seed = read_key(path)
    if seed is None:
        raise BadKey(
            what=f"signing key {path}",
            reason="not a private 32-byte file of this user (mode 0600): fix or remove it",
        )
    private = Ed25519PrivateKey.from_private_bytes(seed)
    register(ws, public_of(private, owner=f"registry on {socket.gethostname()}"))
    return private


def public_of(private: Ed25519PrivateKey, *, owner: str = "") -> PublicKey:
    from cryptography.hazmat.primitives import serialization

    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return PublicKey(raw, owner)


def register(ws: Workspace, key: PublicKey) -> None:
    """Record ``key`` in ``signing_keys`` unless it is there."""
    from pinbench.db.models import SigningKey

    with ws.transaction() as session:
        if session.get(SigningKey, key.keyid) is None:
            session.add(
                SigningKey(
                    keyid=key.keyid,
                    algorithm=ALGORITHM,
                    public=key.hex,
                    owner=key.owner[:200],
                    created_at=datetime.now(UTC),
                )
            )


def known_keys(ws: Workspace) -> list[PublicKey]:
    """The public keys this registry records, oldest first."""
    from sqlalchemy import select

    from pinbench.db.models import SigningKey

    with ws.transaction() as session:
        rows = session.scalars(select(SigningKey).order_by(SigningKey.created_at)).all()
        return [PublicKey(bytes.fromhex(r.public), r.owner) for r in rows]


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
