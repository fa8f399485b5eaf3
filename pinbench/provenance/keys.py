"""This registry's signing keys: one active key per purpose, rotated only on request.

Two purposes, each a private key in ``HOME/keys`` (0600 in a 0700 folder; a file others may
read or write is refused, never used) and its public key recorded in ``signing_keys`` (served
at ``/api/v1/keys``):

- ``attestation``: Ed25519, signs run attestations (``signing.ed25519``, the 32-byte seed); its
  key id is the sha256 of the raw public key.
- ``model-signing``: ECDSA P-256, signs models in the OpenSSF model-signing format
  (``model-signing.p256``, the 32-byte private scalar); its key id is the sha256 of its PEM,
  the ``publicKey.hint`` of the signatures it makes.

A key is made only while the registry has never recorded one of that purpose (``pinbench
init`` on a fresh home, or the first use after an upgrade). After that the file must hold the
recorded active key: a missing file, or one holding other bytes, is refused naming both keys,
never replaced. ``rotate`` is the one way to a new key: the active one is marked retired (with
the date) and kept for verifying what it signed before; its private key is overwritten.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
    )

    from pinbench.workspace import Workspace

from pinbench.provenance.key_material import (
    _ALGORITHMS,
    _FILES,
    ATTESTATION,
    MODEL_SIGNING,
    PURPOSES,
    SECRET_BYTES,
    KeyFileRefused,
    KeyRecord,
    PublicKey,
    _checked_public,
    _ed25519,
    _new_secret,
    _p256,
    _public_of,
    iso,
    utc,
)

# ---------------------------------------------------------------- the key files


def key_path(ws: Workspace, purpose: str = ATTESTATION) -> Path:
    return ws.settings.home / "keys" / _FILES[purpose]


def _safe_folder(folder: Path, purpose: str) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise KeyFileRefused(
            purpose=purpose,
            reason="is in a folder others may write (the key could be swapped): chmod 700 it",
        )


def _read_secret(path: Path, purpose: str) -> bytes:
    from pinbench.artifacts.verified import read_key

    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(path)
    secret = read_key(path)
    if secret is None:
        raise KeyFileRefused(
            purpose=purpose,
            reason=f"is not a private {SECRET_BYTES}-byte file of this user (mode 0600, not a "
            "link): it is not used",
        )
    return secret


def _write_new(path: Path, secret: bytes) -> Path:
    """``secret`` in a new 0600 file beside ``path`` (not yet in its place)."""
    temp = path.parent / f".{path.name}.{secrets.token_hex(8)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(secret)
        out.flush()
        os.fsync(out.fileno())
    return temp


KEY_COLUMNS = "keyid, purpose, algorithm, public, owner, created_at, retired_at"
"""The columns of ``signing_keys``, as ``_record`` reads them."""
INSERT_KEY = (
    f"INSERT INTO signing_keys ({KEY_COLUMNS}) VALUES (:keyid, :purpose, :algorithm, :public, "
    ":owner, :created_at, :retired_at)"
)


def _rows(ws: Workspace, purpose: str) -> list[KeyRecord]:
    with ws.reads() as rows:
        found = rows(
            f"SELECT {KEY_COLUMNS} FROM signing_keys WHERE purpose = :purpose "
            "ORDER BY created_at, keyid",
            {"purpose": purpose},
        )
    return [_record(r) for r in found]


def _owner() -> str:
    return f"registry on {socket.gethostname()}"[:200]


def _active_secret(ws: Workspace, purpose: str) -> bytes:
    """The private key bytes of this registry's active ``purpose`` key, checked against the
    record; made (and recorded) only when the registry never had a key of that purpose."""
    path = key_path(ws, purpose)
    _safe_folder(path.parent, purpose)
    rows = _rows(ws, purpose)
    if not rows:  # a fresh registry: the one time a key is made without `keys rotate`
        temp = _write_new(path, _new_secret(purpose))
        try:
            with contextlib.suppress(FileExistsError):
                os.link(temp, path)  # two processes at once agree on one key
        finally:
            temp.unlink(missing_ok=True)
        secret = _read_secret(path, purpose)
        keyid, public = _checked_public(purpose, secret)
        values = _values(purpose, keyid, public, datetime.now(UTC))
        with ws.writes() as write:  # each process of a fresh registry: one row (decision 286)
            write(f"{INSERT_KEY} ON CONFLICT (keyid) DO NOTHING", values)
        rows = _rows(ws, purpose)
    active = [r for r in rows if r.retired_at is None]
    if not active:
        raise KeyFileRefused(
            purpose=purpose,
            reason=f"has no active key to match: every recorded {purpose} key is retired "
            f"(`pinbench keys rotate --kind {purpose}` makes one)",
        )
    want = active[-1].keyid
    fix = (
        f"restore the file of key {want[:16]} from a backup, or retire that key and make a "
        f"new one with `pinbench keys rotate --kind {purpose}` (a key is never replaced "
        "silently)"
    )
    try:
        secret = _read_secret(path, purpose)
    except FileNotFoundError:
        raise KeyFileRefused(
            purpose=purpose, reason=f"is missing; this registry's active key is {want[:16]}: {fix}"
        ) from None
    keyid = _checked_public(purpose, secret)[0]
    if keyid != want:
        retired = next((r for r in rows if r.keyid == keyid), None)
        held = (
            f"retired key {keyid[:16]} (retired {iso(retired.retired_at)[:10]})"
            if retired is not None and retired.retired_at is not None
            else f"key {keyid[:16]}, which this registry never recorded"
        )
        raise KeyFileRefused(
            purpose=purpose, reason=f"holds {held}, not the active key {want[:16]}: {fix}"
        )
    return secret


def _values(purpose: str, keyid: str, public: str, now: datetime) -> dict[str, Any]:
    return {
        "keyid": keyid,
        "purpose": purpose,
        "algorithm": _ALGORITHMS[purpose],
        "public": public,
        "owner": _owner(),
        "created_at": now,
        "retired_at": None,
    }


def signing_key(ws: Workspace) -> Ed25519PrivateKey:
    """This registry's active attestation key (Ed25519), checked against its record."""
    return _ed25519(_active_secret(ws, ATTESTATION))


def model_signing_key(ws: Workspace) -> tuple[EllipticCurvePrivateKey, str]:
    """This registry's active model-signing key (EC P-256) and its key id."""
    secret = _active_secret(ws, MODEL_SIGNING)
    return _p256(secret), _checked_public(MODEL_SIGNING, secret)[0]


def ensure_keys(ws: Workspace) -> dict[str, str]:
    """Every purpose's active key checked (made on a fresh registry): purpose -> key id."""
    return {p: _checked_public(p, _active_secret(ws, p))[0] for p in PURPOSES}


def key_problems(ws: Workspace) -> dict[str, str]:
    """Purpose -> why its key file is refused, for each purpose whose file does not hold its
    active key (a fresh registry's keys are made on the way)."""
    problems = {}
    for purpose in PURPOSES:
        try:
            _active_secret(ws, purpose)
        except KeyFileRefused as exc:
            problems[purpose] = str(exc)
    return problems


def rotate(ws: Workspace, purpose: str) -> tuple[KeyRecord | None, KeyRecord]:
    """Retire the active ``purpose`` key (kept, dated, for verifying what it signed before) and
    make a new one active; (retired, new). The old key's file need not be there: a lost or
    leaked key is what rotation is for.

    The record changes first, then the file: a crash between leaves the file holding the
    retired key, which is refused by name until ``rotate`` runs again."""
    if purpose not in PURPOSES:
        raise UserError(f"unknown key kind {purpose!r}: expected one of {', '.join(PURPOSES)}")
    path = key_path(ws, purpose)
    _safe_folder(path.parent, purpose)
    secret = _new_secret(purpose)
    keyid, public = _public_of(purpose, secret)
    temp = _write_new(path, secret)
    try:
        now = datetime.now(UTC)
        values = _values(purpose, keyid, public, now)
        with ws.writes() as write:
            active = write(
                f"SELECT {KEY_COLUMNS} FROM signing_keys WHERE purpose = :purpose "
                "AND retired_at IS NULL ORDER BY created_at, keyid",
                {"purpose": purpose},
            )
            write(
                "UPDATE signing_keys SET retired_at = :now "
                "WHERE purpose = :purpose AND retired_at IS NULL",
                {"now": now, "purpose": purpose},
            )
            write(INSERT_KEY, values)
        retired = [replace(_record(r), retired_at=now) for r in active]
        new = _record([values[c] for c in KEY_COLUMNS.split(", ")])
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return (retired[-1] if retired else None), new


def _record(row: Sequence[Any]) -> KeyRecord:
    """A row of ``KEY_COLUMNS`` (SQLite keeps the times as text, PostgreSQL's driver decodes
    them)."""
    from pinbench.db.plain import when

    keyid, purpose, algorithm, public, owner, created_at, retired_at = row
    return KeyRecord(
        keyid=str(keyid),
        purpose=str(purpose),
        algorithm=str(algorithm),
        public=str(public),
        owner=str(owner),
        created_at=utc(when(created_at)),
        retired_at=None if retired_at is None else utc(when(retired_at)),
    )


def key_records(ws: Workspace) -> list[KeyRecord]:
    """Every key this registry records, by purpose, oldest first."""
    return [r for p in PURPOSES for r in _rows(ws, p)]


def known_keys(ws: Workspace) -> list[PublicKey]:
    """The attestation keys this registry records (retired ones with their date), oldest
    first."""
    return [r.attestation_key() for r in key_records(ws) if r.purpose == ATTESTATION]
