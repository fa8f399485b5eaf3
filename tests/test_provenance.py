"""Signed provenance (issue 23, part 1): every recorded run is attested with an in-toto
Statement v1 whose predicate is SLSA Provenance v1, in a DSSE envelope signed with the
registry's Ed25519 key. Envelopes verify with independent code (securesystemslib's DSSE,
in-toto-attestation's protobuf schemas), and every tampered part is refused by name."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete

from pinbench.artifacts.digest import Digest
from pinbench.db.models import Attestation
from pinbench.provenance.dsse import pae
from pinbench.provenance.key_material import public_of
from pinbench.provenance.keys import key_path, signing_key
from pinbench.workspace import Workspace
from tests.apiserver import Server
from tests.helpers import DIGITS_ACCURACY, Cli, in_process_cli, published_workspace, run_digits


@dataclass
class Home:
    ws: Workspace
    home: Path
    db: str
    run: str


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Home]:
    """The digits catalog published and one accuracy run recorded (so attested)."""
    root = tmp_path_factory.mktemp("provenance")
    ws = published_workspace(root, catalog_dir)
    yield Home(ws, root / "home", f"sqlite:///{root}/db", run_digits(ws))
    ws.close()


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


@pytest.fixture
def attested(home: Home, cli: Cli, tmp_path: Path) -> Path:
    """``pinbench runs attest RUN -o run.intoto.jsonl``."""
    path = tmp_path / "run.intoto.jsonl"
    result = cli("runs", "attest", home.run, "-o", str(path))
    assert result.code == 0, result.err
    return path


def envelope(path: Path) -> dict[str, Any]:
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1
    data: dict[str, Any] = json.loads(lines[0])
    return data


def statement(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(base64.b64decode(envelope(path)["payload"]))
    return data


def rewrite(path: Path, env: dict[str, Any]) -> None:
    path.write_text(json.dumps(env) + "\n")


def resign(home: Home, path: Path, payload: dict[str, Any]) -> None:
    """Replace the statement and sign it again with the registry's own key (a forger with
    the key; what is left to catch is inside the statement)."""
    private = signing_key(home.ws)
    raw = json.dumps(payload).encode()
    sig = private.sign(pae("application/vnd.in-toto+json", raw))
    env = envelope(path)
    env["payload"] = base64.b64encode(raw).decode()
    env["signatures"] = [{"keyid": public_of(private).keyid, "sig": base64.b64encode(sig).decode()}]
    rewrite(path, env)


def subjects_folder(home: Home, path: Path, folder: Path) -> Path:
    """The subjects' bytes as files named like the subjects (what `--blobs` reads)."""
    folder.mkdir()
    for subject in statement(path)["subject"]:
        blob = home.ws.store.path(Digest(subject["digest"]["sha256"]))
        (folder / subject["name"]).write_bytes(blob.read_bytes())
    return folder


# ---------------------------------------------------------------- what is attested


def test_a_recorded_run_is_attested_when_it_is_recorded(home: Home, attested: Path) -> None:
    s = statement(attested)
    assert s["_type"] == "https://in-toto.io/Statement/v1"
    assert s["predicateType"] == "https://slsa.dev/provenance/v1"
    names = [x["name"] for x in s["subject"]]
    logs = ["mlperf_log_summary.txt", "mlperf_log_detail.txt", "mlperf_log_accuracy.json"]
    assert names == ["latencies.npy", "outputs.npy", *logs, "results.json"]  # LoadGen's logs
    build = s["predicate"]["buildDefinition"]
    assert build["internalParameters"]["attested"] == "when recorded"
    lock = build["externalParameters"]["lockfile"]
    assert json.loads(lock["body"])["request"] == build["externalParameters"]["request"]
    meta = s["predicate"]["runDetails"]["metadata"]
    assert meta["invocationId"] == home.run
    assert meta["startedOn"] <= meta["finishedOn"]
    run = s["predicate"]["runDetails"]["byproducts"][0]["annotations"]
    assert run["runner"] == "local" and run["status"] == "succeeded"
    assert run["environmentDigest"] and run["host"]["cpu"]
    deps = {d["uri"] for d in build["resolvedDependencies"]}
    assert "pinbench:model/vision/digits-logreg@1.2.0" in deps


def test_verify_accepts_an_untouched_attestation(cli: Cli, attested: Path, home: Home) -> None:
    result = cli("attest", "verify", str(attested))
    assert result.code == 0, result.err
    assert f"verified: run {home.run} (succeeded)" in result.out
    assert "attested when recorded" in result.out
    logs = "mlperf_log_summary.txt, mlperf_log_detail.txt, mlperf_log_accuracy.json"
    assert f"latencies.npy, outputs.npy, {logs}, results.json" in result.out


def test_an_independent_dsse_verifier_accepts_the_envelope(home: Home, attested: Path) -> None:
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]

    public = public_of(signing_key(home.ws))
    key = SSlibKey(public.keyid, "ed25519", "ed25519", {"public": public.hex})
    env = Envelope.from_dict(envelope(attested))
    assert set(env.verify([key], 1)) == {public.keyid}


def test_the_statement_and_predicate_fit_in_totos_own_schemas(attested: Path) -> None:
    from google.protobuf import json_format
    from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement

    s = statement(attested)
    pb = json_format.ParseDict(s, statement_pb2.Statement())  # unknown fields are refused
    Statement.copy_from_pb(pb).validate()
    json_format.ParseDict(s["predicate"], provenance_pb2.Provenance())


def test_a_run_recorded_before_is_attested_after_the_fact(
    home: Home, cli: Cli, tmp_path: Path
) -> None:
    with home.ws.transaction() as session:
        session.execute(delete(Attestation).where(Attestation.run_id == home.run))
    path = tmp_path / "late.intoto.jsonl"
    result = cli("runs", "attest", home.run[:8], "-o", str(path))
    assert result.code == 0 and "after the fact" in result.out
    assert statement(path)["predicate"]["buildDefinition"]["internalParameters"]["attested"] == (
        "after the fact"
    )
    assert "attested after the fact" in cli("attest", "verify", str(path)).out
    again = tmp_path / "again.intoto.jsonl"
    cli("runs", "attest", home.run, "-o", str(again))
    assert again.read_bytes() == path.read_bytes()  # recorded: the same envelope again


def _attestations(ws: Workspace, run_id: str) -> int:
    """How many attestations of the run another connection sees (what a client reads)."""
    from sqlalchemy import func, select

    with ws.engine.connect() as conn:
        count = select(func.count()).select_from(Attestation).where(Attestation.run_id == run_id)
        return int(conn.execute(count).scalar_one())


def test_a_run_and_its_attestation_are_committed_together(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that sees the run finished finds it attested: the attestation is in the
    record's own transaction. (It was made just after, and a server's client that asked for
    it in that moment got one made "after the fact": a run of the suite on a busy machine.)"""
    from pinbench.db.run_record import write
    from pinbench.evaluator.records import recording

    seen: dict[str, int] = {}

    def watched(ws: Workspace, record: Any, *also: Any) -> bool:
        written = write(ws, record, *also)
        seen[record.id] = _attestations(ws, record.id)  # as soon as the record is committed
        return written

    monkeypatch.setattr(recording, "write", watched)
    run = run_digits(home.ws)
    assert seen == {run: 1}


def test_a_run_is_signed_before_its_record_takes_the_databases_write_lock(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signing and storing the envelope wait for the store's lock; a publish holds that lock
    and then writes to the database. Holding the database's write lock meanwhile (the
    record's transaction) would make each wait for the other until SQLite's timeout."""
    from pinbench.provenance import dsse

    free: list[bool] = []
    sign = dsse.sign

    def watched(*args: Any, **kwargs: Any) -> Any:
        free.append(_writable(home))
        return sign(*args, **kwargs)

    monkeypatch.setattr(dsse, "sign", watched)
    run = run_digits(home.ws)
    assert free == [True]
    assert _attestations(home.ws, run) == 1


def _writable(home: Home) -> bool:
    """Can another writer (as a publish would be) take the database's write lock now?"""
    import sqlite3

    other = sqlite3.connect(home.db.removeprefix("sqlite:///"), timeout=0.2, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:  # "database is locked": someone holds the write lock
        return False
    finally:
        other.close()


def test_attesting_after_the_fact_stores_its_blobs_outside_any_transaction(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``runs attest`` stores ``results.json`` and the envelope while no transaction of its
    own holds the database's write lock (decision 305: the plain-SQL version first held it
    from the start, and each store write waits for the store's lock, which a publish holds
    while it writes to the database)."""
    from pinbench.config import Settings
    from pinbench.provenance.attest import attest_run

    ws = Workspace(Settings(home=home.home, database_url=home.db))  # SQLite's own driver
    free: list[bool] = []
    put = ws.store.put_bytes

    def watched(data: bytes) -> Digest:
        free.append(_writable(home))
        return put(data)

    monkeypatch.setattr(ws.store, "put_bytes", watched)
    before = _attestations(home.ws, home.run)
    try:
        attest_run(ws, home.run, after_the_fact=True)
    finally:
        ws.close()
    assert free == [True, True]  # results.json, then the envelope
    assert _attestations(home.ws, home.run) == before + 1


def test_signing_that_fails_leaves_the_run_recorded_and_attestable_later(
    home: Home, cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pinbench.evaluator.run import run_lockfile
    from pinbench.provenance import dsse
    from pinbench.registry import service
    from pinbench.registry.request import parse_request

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the signer is away")

    said: list[str] = []
    lock = service.lock(home.ws, parse_request(DIGITS_ACCURACY))[0]
    with monkeypatch.context() as m:
        m.setattr(dsse, "sign", broken)
        outcome = run_lockfile(home.ws, lock, runner="local", say=said.append)
    assert outcome.status == "succeeded"
    assert any("recorded without an attestation (the signer is away)" in line for line in said)
    assert _attestations(home.ws, outcome.id) == 0
    result = cli("runs", "attest", outcome.id, "-o", str(tmp_path / "late.intoto.jsonl"))
    assert result.code == 0 and "after the fact" in result.out
    assert _attestations(home.ws, outcome.id) == 1


def test_keys_list_shows_the_registry_key(home: Home, cli: Cli) -> None:
    result = cli("keys", "list", "--json")
    keys = [k for k in json.loads(result.out) if k["purpose"] == "attestation"]
    assert [k["keyid"] for k in keys] == [public_of(signing_key(home.ws)).keyid]
    assert keys[0]["algorithm"] == "ed25519" and len(keys[0]["public"]) == 64
    assert keys[0]["state"] == "active" and keys[0]["retired_at"] is None


def test_verify_with_the_key_given_and_the_blobs_in_a_folder(
    home: Home, cli: Cli, attested: Path, tmp_path: Path
) -> None:
    """Someone without the registry: the key obtained apart, the subjects as files."""
    key = tmp_path / "signer.pem"
    key.write_text(public_of(signing_key(home.ws)).pem())
    blobs = subjects_folder(home, attested, tmp_path / "blobs")
    result = cli("attest", "verify", str(attested), "--key", str(key), "--blobs", str(blobs))
    assert result.code == 0, result.err


# ---------------------------------------------------------------- tampering, part by part


def _refused(cli: Cli, path: Path, says: str, *extra: str) -> None:
    result = cli("attest", "verify", str(path), *extra)
    assert result.code == 1, result.out
    assert says in result.err and "Traceback" not in result.err


def test_a_changed_payload_byte_is_refused(home: Home, cli: Cli, attested: Path) -> None:
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]

    env = envelope(attested)
    raw = bytearray(base64.b64decode(env["payload"]))
    raw[raw.index(b'"succeeded"') + 1] ^= 0x20  # "succeeded" -> "Succeeded"
    env["payload"] = base64.b64encode(bytes(raw)).decode()
    rewrite(attested, env)
    _refused(cli, attested, "signature: the payload or the signature was altered")
    public = public_of(signing_key(home.ws))
    key = SSlibKey(public.keyid, "ed25519", "ed25519", {"public": public.hex})
    with pytest.raises(VerificationError):
        Envelope.from_dict(env).verify([key], 1)


def test_a_changed_signature_is_refused(cli: Cli, attested: Path) -> None:
    env = envelope(attested)
    sig = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
    sig[0] ^= 1
    env["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    rewrite(attested, env)
    _refused(cli, attested, "signature: the payload or the signature was altered")


def test_another_key_is_refused(cli: Cli, attested: Path, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    other = tmp_path / "other.pem"
    other.write_text(public_of(Ed25519PrivateKey.generate()).pem())
    _refused(cli, attested, "signature: signed by key", "--key", str(other))


def test_a_subjects_changed_bytes_are_refused(
    home: Home, cli: Cli, attested: Path, tmp_path: Path
) -> None:
    blobs = subjects_folder(home, attested, tmp_path / "blobs")
    data = bytearray((blobs / "latencies.npy").read_bytes())
    data[-1] ^= 1
    (blobs / "latencies.npy").write_bytes(bytes(data))
    _refused(cli, attested, "subject latencies.npy: its bytes hash to", "--blobs", str(blobs))
    (blobs / "outputs.npy").unlink()
    (blobs / "latencies.npy").write_bytes(
        home.ws.store.path(
            Digest(statement(attested)["subject"][0]["digest"]["sha256"])
        ).read_bytes()
    )
    _refused(cli, attested, "subject outputs.npy: its bytes are not found", "--blobs", str(blobs))


def test_a_lockfile_that_does_not_hash_to_its_id_is_refused(
    home: Home, cli: Cli, attested: Path
) -> None:
    s = statement(attested)
    lock = s["predicate"]["buildDefinition"]["externalParameters"]["lockfile"]
    lock["body"] = lock["body"].replace('"batch_size":1', '"batch_size":2')
    resign(home, attested, s)
    _refused(cli, attested, "lockfile: its body hashes to")


def test_results_of_another_run_are_refused(home: Home, cli: Cli, attested: Path) -> None:
    s = statement(attested)
    s["predicate"]["runDetails"]["metadata"]["invocationId"] = "another-run"
    resign(home, attested, s)
    _refused(cli, attested, "subject results.json: names another run or lockfile")


def test_a_subject_name_that_is_a_path_is_refused(
    home: Home, cli: Cli, attested: Path, tmp_path: Path
) -> None:
    blobs = subjects_folder(home, attested, tmp_path / "blobs")
    s = statement(attested)
    s["subject"][0]["name"] = "../run.intoto.jsonl"
    resign(home, attested, s)
    _refused(cli, attested, "is not a plain file name", "--blobs", str(blobs))


def test_a_file_that_is_not_an_envelope_is_refused(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("not json\n")
    _refused(cli, path, "line 1: not JSON")


def test_an_envelope_with_a_key_given_twice_is_refused(cli: Cli, attested: Path) -> None:
    """Two "payload" keys: Python's json keeps the last, other readers the first, so the bytes
    verified need not be the bytes another tool reads. Refused, whichever is signed."""
    line = attested.read_bytes().rstrip(b"\n")
    forged = b'{"payload":"e30=",' + line[1:]  # {} first, the signed payload last
    attested.write_bytes(forged + b"\n")
    _refused(cli, attested, "line 1: not JSON pinbench accepts: key 'payload' appears twice")


def test_a_statement_with_a_key_given_twice_is_refused(
    home: Home, cli: Cli, attested: Path
) -> None:
    """Signed with the registry's key, so only the statement's own reading can refuse it."""
    text = json.dumps(statement(attested))
    doubled = text.replace('"_type":', '"subject": [], "_type":', 1)
    private = signing_key(home.ws)
    raw = doubled.encode()
    env = envelope(attested)
    env["payload"] = base64.b64encode(raw).decode()
    sig = private.sign(pae("application/vnd.in-toto+json", raw))
    env["signatures"] = [{"keyid": public_of(private).keyid, "sig": base64.b64encode(sig).decode()}]
    rewrite(attested, env)
    _refused(cli, attested, "payload: not JSON pinbench accepts: key 'subject' appears twice")


@pytest.mark.parametrize(
    "line",
    [
        b"[" * 100_000 + b"]" * 100_000,  # RecursionError in the parser
        b'{"a":' * 100 + b"1" + b"}" * 100,  # parses, but past the bound
    ],
    ids=["deeper-than-the-parser", "past-the-bound"],
)
def test_a_deeply_nested_line_is_refused_without_a_traceback(
    cli: Cli, tmp_path: Path, line: bytes
) -> None:
    path = tmp_path / "deep.intoto.jsonl"
    path.write_bytes(line + b"\n")
    _refused(cli, path, "line 1: not JSON pinbench accepts: nested more than 64 deep")


def test_lines_end_at_lf_only(cli: Cli, attested: Path) -> None:
    """A CR inside a line does not start a new one (JSON allows it as whitespace)."""
    line = attested.read_bytes().rstrip(b"\n")
    attested.write_bytes(line.replace(b'"payloadType":', b'\r"payloadType":', 1) + b"\r\n")
    result = cli("attest", "verify", str(attested))
    assert result.code == 0, result.err


def test_an_unsafe_key_file_is_refused_not_used(home: Home) -> None:
    path = key_path(home.ws)
    path.chmod(0o644)
    try:
        with pytest.raises(Exception, match="not a private 32-byte file"):
            signing_key(home.ws)
    finally:
        path.chmod(0o600)
    path.parent.chmod(0o777)
    try:
        with pytest.raises(Exception, match="in a folder others may write"):
            signing_key(home.ws)
    finally:
        path.parent.chmod(0o700)


# ---------------------------------------------------------------- through a server
# (``server``: the module's own, tests/conftest.py)


def test_a_server_run_is_attested_and_verifies_through_the_api(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pinbench.cli import main

    monkeypatch.setenv("PINBENCH_URL", server.url)
    monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["owner"])
    monkeypatch.setenv("PINBENCH_HOME", "/nonexistent/the-cli-must-not-use-a-local-home")
    request = tmp_path / "request.json"
    request.write_text(json.dumps(DIGITS_ACCURACY))
    lock = tmp_path / "run.lock"
    assert main(["lock", str(request), "-o", str(lock)]) == 0
    capsys.readouterr()
    assert main(["run", str(lock), "--runner", "local", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["id"]
    path = tmp_path / "run.intoto.jsonl"
    assert main(["runs", "attest", run_id, "-o", str(path)]) == 0
    assert main(["attest", "verify", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    verified = json.loads(out[out.index("[") :])
    assert verified[0]["run"] == run_id and verified[0]["after_the_fact"] is False
    assert verified[0]["key_source"] == "server"  # said: consistent, not independent
    with server.client("reader") as client:
        keys = client.get("/api/v1/keys").json()
        signers = [k["keyid"] for k in keys if k["purpose"] == "attestation"]
        assert signers == [verified[0]["keyid"]]
        refused = client.post(f"/api/v1/runs/{run_id}/attestation")
        assert refused.status_code == 403  # attesting needs the run scope
    with server.client("owner") as client:
        again = client.post(f"/api/v1/runs/{run_id}/attestation")
        assert again.status_code == 200  # attested when recorded: the same envelope, no new one
        assert again.content == path.read_bytes()
