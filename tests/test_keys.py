"""This registry's signing keys (issue 34, item 12): made once on a fresh home, never
replaced silently; a missing or foreign key file is refused by name; ``keys rotate`` is the one
way to a new key, and a retired key verifies only what it attested before its retirement."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select, text

from pinbench.config import Settings
from pinbench.db import migrate
from pinbench.db.engine import make_engine
from pinbench.db.models import Attestation, SigningKey
from pinbench.provenance.dsse import pae
from pinbench.provenance.key_material import ATTESTATION, MODEL_SIGNING, KeyFileRefused, public_of
from pinbench.provenance.keys import key_path, model_signing_key, signing_key
from pinbench.workspace import Workspace
from tests.helpers import Cli, Home, in_process_cli, published_home, run_digits


def rows(ws: Workspace) -> list[tuple[str, str, datetime | None]]:
    with ws.transaction() as session:
        found = session.scalars(select(SigningKey).order_by(SigningKey.created_at)).all()
        return [(r.keyid, r.purpose, r.retired_at) for r in found]


@pytest.fixture
def fresh(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    database_url: str,
) -> Iterator[tuple[Workspace, Cli]]:
    """A home made by ``pinbench init`` on each engine; its workspace and the CLI on it."""
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "home", database_url)
    result = cli("init", "--json")
    assert result.code == 0, result.err
    ws = Workspace(Settings(home=tmp_path / "home", database_url=database_url))
    yield ws, cli
    ws.close()


def listed(cli: Cli) -> list[dict[str, Any]]:
    result = cli("keys", "list", "--json")
    assert result.code == 0, result.err
    keys: list[dict[str, Any]] = json.loads(result.out)
    return keys


# ---------------------------------------------------------------- made once, then checked


def test_init_on_a_fresh_home_makes_one_key_of_each_kind(fresh: tuple[Workspace, Cli]) -> None:
    ws, cli = fresh
    keys = listed(cli)
    assert [(k["purpose"], k["algorithm"], k["state"]) for k in keys] == [
        ("attestation", "ed25519", "active"),
        ("model-signing", "ecdsa-p256", "active"),
    ]
    assert keys[0]["keyid"] == public_of(signing_key(ws)).keyid
    assert keys[1]["keyid"] == model_signing_key(ws)[1]
    assert keys[1]["pem"].startswith("-----BEGIN PUBLIC KEY-----")
    for purpose in (ATTESTATION, MODEL_SIGNING):
        assert key_path(ws, purpose).stat().st_mode & 0o777 == 0o600
    text = cli("keys", "list").out
    assert "attestation    ed25519     active" in text
    assert "model-signing  ecdsa-p256  active" in text
    again = cli("init", "--json")  # a second init checks the keys, never replaces them
    assert again.code == 0, again.err
    assert [k["keyid"] for k in listed(cli)] == [k["keyid"] for k in keys]


def test_rotation_records_the_retired_and_the_new_key(fresh: tuple[Workspace, Cli]) -> None:
    """Each kind rotated twice (the keys' rows are read and written with plain SQL, issue 75):
    one active key per kind, the ones before retired in order, each retired when the next was
    made."""
    ws, cli = fresh
    made = [(k["keyid"], k["purpose"]) for k in listed(cli)]
    for _ in range(2):
        for purpose in (ATTESTATION, MODEL_SIGNING):
            result = cli("keys", "rotate", "--kind", purpose, "--json")
            assert result.code == 0, result.err
            made.append((json.loads(result.out)[0]["active"]["keyid"], purpose))
    keys = listed(cli)
    for purpose in (ATTESTATION, MODEL_SIGNING):
        mine = [k for k in keys if k["purpose"] == purpose]
        assert [k["keyid"] for k in mine] == [k for k, p in made if p == purpose]
        assert [k["state"] for k in mine] == ["retired", "retired", "active"]
        for older, newer in itertools.pairwise(mine):
            assert older["retired_at"] == newer["created_at"]
    assert public_of(signing_key(ws)).keyid == made[-2][0]
    assert model_signing_key(ws)[1] == made[-1][0]


def _delete(path: Path) -> None:
    path.unlink()


def _replace(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))


#   damage           what the refusal says
DAMAGE = [
    (_delete, "is missing; this registry's active key is"),
    (_replace, "which this registry never recorded, not the active key"),
]


@pytest.mark.parametrize("purpose", [ATTESTATION, MODEL_SIGNING])
@pytest.mark.parametrize(("damage", "says"), DAMAGE, ids=["deleted", "replaced"])
def test_a_missing_or_foreign_key_file_is_refused_never_replaced(
    fresh: tuple[Workspace, Cli], purpose: str, damage: Any, says: str
) -> None:
    """The hole: a deleted or replaced key file was replaced by a new key, trusted at once."""
    ws, cli = fresh
    path = key_path(ws, purpose)
    before = rows(ws)
    active = next(k for k in before if k[1] == purpose)[0]
    damage(path)
    after_damage = path.read_bytes() if path.exists() else None
    use = signing_key if purpose == ATTESTATION else model_signing_key
    with pytest.raises(KeyFileRefused) as refused:
        use(ws)
    message = str(refused.value)
    assert says in message and active[:16] in message
    assert f"pinbench keys rotate --kind {purpose}" in message
    assert rows(ws) == before, "no key was recorded"
    assert (path.read_bytes() if path.exists() else None) == after_damage, "nor written"
    listing = cli("keys", "list")
    assert listing.code == 0 and f"warning: {purpose} key file" in listing.err
    assert cli("init").code == 3, "init on a home that has keys never makes new ones"
    assert rows(ws) == before


def test_a_key_file_others_may_read_is_refused(fresh: tuple[Workspace, Cli]) -> None:
    ws, _ = fresh
    path = key_path(ws, MODEL_SIGNING)
    path.chmod(0o644)
    with pytest.raises(KeyFileRefused, match="not a private 32-byte file"):
        model_signing_key(ws)


def test_a_home_upgraded_from_before_gets_its_model_signing_key_on_first_use(
    fresh: tuple[Workspace, Cli],
) -> None:
    """A registry that never had a key of a purpose is fresh for it: the one case a key is made
    without `keys rotate` (after an upgrade, the model-signing key)."""
    ws, cli = fresh
    with ws.transaction() as session:
        session.execute(delete(SigningKey).where(SigningKey.purpose == MODEL_SIGNING))
    key_path(ws, MODEL_SIGNING).unlink()
    _, keyid = model_signing_key(ws)
    assert [k["keyid"] for k in listed(cli) if k["purpose"] == MODEL_SIGNING] == [keyid]


def test_the_migration_retires_each_key_replaced_before(tmp_path: Path) -> None:
    """Before rotation, a replaced key file left both keys trusted: upgrading marks each but
    the newest retired when the next one was recorded."""
    engine = make_engine(f"sqlite:///{tmp_path}/db")
    migrate.upgrade(engine, "0009")
    with engine.begin() as conn:
        for n, (keyid, when) in enumerate([("a" * 64, "2026-01-01"), ("b" * 64, "2026-02-01")]):
            conn.execute(
                text(
                    "INSERT INTO signing_keys (keyid, algorithm, public, owner, created_at) "
                    "VALUES (:k, 'ed25519', :p, 'old', :c)"
                ),
                {"k": keyid, "p": f"{n:064x}", "c": f"{when} 00:00:00.000000"},
            )
    migrate.upgrade(engine)
    with engine.connect() as conn:
        found = conn.execute(
            text("SELECT keyid, purpose, retired_at FROM signing_keys ORDER BY keyid")
        ).all()
    engine.dispose()
    assert [(k[0][0], k[1], str(k[2])[:10] if k[2] else None) for k in found] == [
        ("a", "attestation", "2026-02-01"),
        ("b", "attestation", None),
    ]


# ---------------------------------------------------------------- rotation


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Home]:
    with published_home(tmp_path_factory.mktemp("keys"), catalog_dir) as home:
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _statement(path: Path) -> dict[str, Any]:
    env = json.loads(path.read_bytes())
    statement: dict[str, Any] = json.loads(base64.b64decode(env["payload"]))
    return statement


def _sign_with(seed: bytes, statement: dict[str, Any], path: Path) -> None:
    """Sign ``statement`` with the Ed25519 key ``seed`` (a thief's copy of a key file)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.from_private_bytes(seed)
    raw = json.dumps(statement).encode()
    sig = base64.b64encode(private.sign(pae("application/vnd.in-toto+json", raw))).decode()
    env = {
        "payloadType": "application/vnd.in-toto+json",
        "payload": base64.b64encode(raw).decode(),
        "signatures": [{"keyid": public_of(private).keyid, "sig": sig}],
    }
    path.write_text(json.dumps(env) + "\n")


def test_rotation_retires_the_old_key_which_verifies_only_what_it_attested_before(
    home: Home, cli: Cli, tmp_path: Path
) -> None:
    ws = home.ws
    run = run_digits(ws)  # attested when recorded, with the key about to be retired
    before = tmp_path / "before.intoto.jsonl"
    assert cli("runs", "attest", run, "-o", str(before)).code == 0
    old_seed = key_path(ws).read_bytes()
    old = public_of(signing_key(ws)).keyid
    old_model = model_signing_key(ws)[1]

    rotated = cli("keys", "rotate", "--kind", "attestation", "--json")
    assert rotated.code == 0, rotated.err
    (done,) = json.loads(rotated.out)
    new = done["active"]["keyid"]
    assert done["retired"]["keyid"] == old and new != old
    assert key_path(ws).read_bytes() != old_seed, "the retired private key is overwritten"
    assert public_of(signing_key(ws)).keyid == new
    keys = {k["keyid"]: k for k in listed(cli)}
    assert keys[old]["state"] == "retired" and keys[old]["retired_at"]
    assert keys[new]["state"] == "active" and keys[new]["retired_at"] is None
    assert keys[old_model]["state"] == "active", "--kind attestation leaves model signing be"
    retired_on = datetime.fromisoformat(keys[old]["retired_at"])
    assert f"retired {retired_on.date()}" in cli("keys", "list").out

    # attested before the retirement: accepted, and said to be by a retired key
    verified = cli("attest", "verify", str(before))
    assert verified.code == 0, verified.err
    assert f"signed by key {old[:12]}" in verified.out and "retired on" in verified.out
    as_json = json.loads(cli("attest", "verify", str(before), "--json").out)
    assert as_json[0]["key_retired_at"] == retired_on.isoformat()

    # a new attestation is signed by the new key
    with ws.transaction() as session:
        session.execute(delete(Attestation).where(Attestation.run_id == run))
    after = tmp_path / "after.intoto.jsonl"
    assert cli("runs", "attest", run, "-o", str(after)).code == 0
    verified = cli("attest", "verify", str(after), "--json")
    assert verified.code == 0 and json.loads(verified.out)[0]["keyid"] == new

    # whoever kept the retired key cannot attest after its retirement
    statement = _statement(before)
    internal = statement["predicate"]["buildDefinition"]["internalParameters"]
    for attested_on, says in [
        (datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "attested on"),
        (None, "with no attestedOn time"),
    ]:
        internal["attestedOn"] = attested_on
        forged = tmp_path / "forged.intoto.jsonl"
        _sign_with(old_seed, statement, forged)
        refused = cli("attest", "verify", str(forged))
        assert refused.code == 1, refused.out
        assert f"signature: signed by key {old[:12]}, retired on" in refused.err
        assert says in refused.err
        assert "verifies only what it attested before its retirement" in refused.err

    # the retired key's file put back is refused by name
    path = key_path(ws)
    current = path.read_bytes()
    path.write_bytes(old_seed)
    try:
        with pytest.raises(KeyFileRefused, match=f"holds retired key {old[:16]}"):
            signing_key(ws)
    finally:
        path.write_bytes(current)

    # a lost key file: rotation needs only the record
    path.unlink()
    assert cli("keys", "rotate", "--kind", "attestation").code == 0
    assert public_of(signing_key(ws)).keyid not in (old, new)


def test_rotate_and_export_refuse_what_they_cannot_do(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    #   command                                              what the refusal says
    cases = [
        (("keys", "rotate", "--kind", "ssh"), "expected one of attestation, model-signing"),
        (("keys", "export", "abc", "-o", str(tmp_path / "k.pem")), "at least 8 hex digits"),
        (("keys", "export", "0" * 16, "-o", str(tmp_path / "k.pem")), "no key of this registry"),
    ]
    for args, says in cases:
        result = cli(*args)
        assert result.code == 1 and says in result.err, (args, result.err)
    assert not (tmp_path / "k.pem").exists()
    monkeypatch.setenv("PINBENCH_URL", "http://127.0.0.1:9")
    result = cli("keys", "rotate")
    assert result.code == 1 and "unset PINBENCH_URL" in result.err


def test_export_writes_the_public_key_as_pem(home: Home, cli: Cli, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    private, keyid = model_signing_key(home.ws)
    out = tmp_path / "model.pem"
    result = cli("keys", "export", keyid[:12], "-o", str(out))
    assert result.code == 0, result.err
    expected = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert out.read_bytes() == expected
    attestation = public_of(signing_key(home.ws))
    assert cli("keys", "export", attestation.keyid, "-o", str(out), "--force").code == 0
    assert out.read_text() == attestation.pem()
