"""Model signatures in the OpenSSF model-signing format (https://github.com/sigstore/
model-transparency, v1.0 predicate), verifiable with its own tool::

    model_signing verify key MODEL_DIR --signature model.sig --public_key key.pem

The signature is a Sigstore bundle (v0.3, JSON) holding a DSSE envelope over an in-toto
Statement v1: its one subject is the model (named ``KIND/NAME@VERSION``) with, as digest, the
sha256 of every file's sha256 in the order listed; its predicate lists every file of the
artifact by its manifest path and sha256 (serialization ``files``, ``sha256``, no symlinks,
nothing ignored). The envelope is signed with this registry's model-signing key (ECDSA P-256
over SHA-256, the DSSE pre-authentication encoding); the bundle's ``publicKey.hint`` is that
key's id (the sha256 of its PEM), as the tool's own signer writes it. No transparency log, no
network.

A signature is made when asked for, from the file digests the registry recorded at publish
(never by reading or hashing the files again): a published version never changes, so the
statement is a pure function of the version, and the signature of the key active then.
Signing is deterministic (RFC 6979) where the ``cryptography`` build supports it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Final

from pinbench.artifacts.canonical import canonical_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

    from pinbench.registry.names import ArtifactRef
    from pinbench.workspace import Workspace

BUNDLE_MEDIA_TYPE: Final = "application/vnd.dev.sigstore.bundle.v0.3+json"
PREDICATE: Final = "https://model_signing/signature/v1.0"
STATEMENT: Final = "https://in-toto.io/Statement/v1"
IN_TOTO: Final = "application/vnd.in-toto+json"
SIGNED_KINDS: Final = ("model",)


class NotSigned(UserError):
    def __init__(self, *, ref: str, reason: str) -> None:
        super().__init__(f"{ref} has no model signature: {reason}")
        self.ref = ref
        self.reason = reason


def model_statement(name: str, files: list[tuple[str, str]]) -> bytes:
    """The in-toto statement (canonical JSON) over ``files``: (manifest path, sha256 hex)."""
    ordered = sorted(files, key=lambda f: PurePosixPath(f[0]))
    root = hashlib.sha256(b"".join(bytes.fromhex(sha) for _, sha in ordered)).hexdigest()
    statement = {
        "_type": STATEMENT,
        "subject": [{"name": name, "digest": {"sha256": root}}],
        "predicateType": PREDICATE,
        "predicate": {
            "serialization": {"method": "files", "hash_type": "sha256", "allow_symlinks": False},
            "resources": [
                {"name": path, "algorithm": "sha256", "digest": sha} for path, sha in ordered
            ],
        },
    }
    return canonical_json(statement)


def bundle(statement: bytes, private: EllipticCurvePrivateKey, keyid: str) -> bytes:
    """The Sigstore bundle (JSON, newline-terminated) of ``statement`` signed by ``private``."""
    from pinbench.provenance.dsse import pae

    signature = _sign(private, pae(IN_TOTO, statement))
    document: dict[str, Any] = {
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": keyid}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": base64.b64encode(statement).decode(),
            "payloadType": IN_TOTO,
            "signatures": [{"sig": base64.b64encode(signature).decode(), "keyid": keyid}],
        },
    }
    return json.dumps(document, indent=2).encode() + b"\n"


def _sign(private: EllipticCurvePrivateKey, message: bytes) -> bytes:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        return private.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    except (TypeError, UnsupportedAlgorithm):  # cryptography < 44 or OpenSSL < 3.2
        return private.sign(message, ec.ECDSA(hashes.SHA256()))


def signature_of(ws: Workspace, ref: ArtifactRef) -> bytes:
    """The model-signing bundle of published model ``ref``, signed now with this registry's
    active model-signing key."""
    from pinbench.provenance.keys import model_signing_key
    from pinbench.registry import catalog

    if ref.kind.value not in SIGNED_KINDS:
        raise NotSigned(ref=str(ref), reason=f"only {', '.join(SIGNED_KINDS)}s are signed")
    info = catalog.show(ws, ref)
    files = [(f["path"], f["sha256"]) for f in info["files"]]
    private, keyid = model_signing_key(ws)
    return bundle(model_statement(str(ref), files), private, keyid)


def bundle_keyid(body: bytes) -> str:
    """The key id a bundle names (its ``publicKey.hint``), or UserError when ``body`` is not a
    bundle."""
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    try:
        document = load_json(body)
    except JsonRefused as exc:
        raise UserError(f"the model signature received is not a bundle: {exc}") from None
    material = document.get("verificationMaterial") if isinstance(document, dict) else None
    key = material.get("publicKey") if isinstance(material, dict) else None
    hint = key.get("hint") if isinstance(key, dict) else None
    if not isinstance(hint, str):
        raise UserError("the model signature received names no key (publicKey.hint)")
    return hint
