"""Every field a reader trusts of a run is signed (issue 84, item 4): its times, host, versions,
submitter, retry link, model and facets moved a gate's window, a listing's filter and a series
while ``fsck`` and ``attest verify`` said nothing. One table edits each column of the run's
tables in turn, in SQL as a process with the database's rights would; ``fsck`` names the edit
with the run and what differs, and ``attest verify`` refuses the run's attestation. A row that
cannot be read (a ``host`` that is not JSON) is named, and the sweep goes on to the next run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pinbench.evaluator.run import queue_run, run_lockfile
from pinbench.workspace import Workspace
from tests.test_processing_code import World, quiet, world

__all__ = ["world"]

# (table, column, the value written, what fsck says of it)
EDITS: list[tuple[str, str, Any, str]] = [
    ("runs", "started_at", "2020-01-01 00:00:00.000000", "started_at: '2020-01-01T00:00:00"),
    ("runs", "finished_at", "2020-01-01 00:01:00.000000", "finished_at: '2020-01-01T00:01:00"),
    ("runs", "host", json.dumps({"hostname": "elsewhere"}), "host differs from what was"),
    ("runs", "framework_version", "9.9.9", "framework_version: '9.9.9' recorded"),
    ("runs", "framework", "tensorflow", "framework: 'tensorflow' recorded"),
    ("runs", "model", "vision/another", "model: 'vision/another' recorded"),
    ("runs", "model_version", "9.9.9", "model_version: '9.9.9' recorded"),
    ("runs", "submitted_by", "mallory", "submitted_by: 'mallory' recorded, 'alice' signed"),
    ("runs", "retry_of", "00000000-0000-4000-8000-000000000000", "retry_of: '00000000-"),
    ("runs", "status", "failed", "status: 'failed' recorded, 'succeeded' signed"),
    ("runs", "runner", "docker", "runner: 'docker' recorded, 'local' signed"),
    ("runs", "system", "lab-z", "system: 'lab-z' recorded, None signed"),
    ("runs", "error", "none at all", "error: 'none at all' recorded, None signed"),
    ("runs", "details", json.dumps({"edited": True}), "details differs from what was signed"),
    ("runs", "environment_digest", "0" * 64, "environment_digest: '000000"),
    ("runs", "trace_level", "full", "trace_level: 'full' recorded, 'none' signed"),
    ("runs", "latencies_sha256", "0" * 64, "latencies_sha256: '000000"),
    ("results", "value", 0.9999, "metric top1: 0.9999 recorded"),
    ("results", "unit", "ns", "units differs from what was signed"),
]


@pytest.fixture(scope="module")
def recorded(world: World) -> Iterator[tuple[Workspace, str, str]]:
    """Two runs of the world's lockfile, each queued by ``alice`` first (a server's run): the
    one the table edits, and another that must still be checked after it."""
    ws = world.home.ws
    ids = []
    for n in range(2):
        run_id = f"5a9e0000-0000-4000-8000-00000000000{n}"
        queue_run(ws, world.lock, runner="local", run_id=run_id, submitted_by="alice")
        run_lockfile(ws, world.lock, runner="local", say=quiet, allow_code=True, run_id=run_id)
        ids.append(run_id)
    yield ws, ids[0], ids[1]


def _problems(ws: Workspace) -> dict[str, str]:
    from pinbench.provenance.records import altered_problems

    return {p.path: p.detail for p in altered_problems(ws)}


def _attest_verify(ws: Workspace, run_id: str) -> None:
    from pinbench.provenance.attest import recorded_attestation
    from pinbench.provenance.dsse import read_envelopes
    from pinbench.provenance.records import record_agrees

    data = recorded_attestation(ws, run_id)
    assert data is not None
    (envelope,) = read_envelopes(data, source="attestation")
    record_agrees(ws, run_id, envelope.payload)


def _set(ws: Workspace, table: str, column: str, run_id: str, value: Any) -> Any:
    """Set ``column`` of run ``run_id``'s row (its top-1 result in ``results``); the value
    it had."""
    key, where = ("run_id", " AND metric = 'top1'") if table == "results" else ("id", "")
    with ws.writes() as rows:
        ((before,),) = rows(
            f"SELECT {column} FROM {table} WHERE {key} = :id{where}", {"id": run_id}
        )
        rows(
            f"UPDATE {table} SET {column} = :v WHERE {key} = :id{where}", {"v": value, "id": run_id}
        )
    return before


@pytest.mark.parametrize(("table", "column", "value", "said"), EDITS, ids=[e[1] for e in EDITS])
def test_an_edit_of_each_trusted_column_is_named_by_fsck_and_attest_verify(
    recorded: tuple[Workspace, str, str], table: str, column: str, value: Any, said: str
) -> None:
    from pinbench.provenance.verify import AttestationRefused

    ws, run_id, _ = recorded
    assert _problems(ws) == {}
    before = _set(ws, table, column, run_id, value)
    try:
        found = _problems(ws)
        assert list(found) == [f"runs/{run_id}"], found
        assert found[f"runs/{run_id}"].startswith("changed after it was signed: ")
        assert said in found[f"runs/{run_id}"], found
        with pytest.raises(AttestationRefused, match="changed after it was signed"):
            _attest_verify(ws, run_id)
    finally:
        _set(ws, table, column, run_id, before)
    assert _problems(ws) == {}
    _attest_verify(ws, run_id)


def test_a_row_that_cannot_be_read_is_named_and_the_sweep_goes_on(
    recorded: tuple[Workspace, str, str],
) -> None:
    """A ``host`` that is not JSON stopped ``fsck`` with a traceback, having checked nothing:
    the run is named, and the next run's edit is found all the same."""
    from pinbench.sdk.registry import Registry

    ws, broken, edited = recorded
    host = _set(ws, "runs", "host", broken, "{not json")
    status = _set(ws, "runs", "status", edited, "failed")
    try:
        with Registry(home=ws.settings.home, database_url=ws.settings.database_url) as reg:
            checked = reg.admin().check_store()
        found = {p.path: p.detail for p in checked.problems if p.kind == "record"}
        assert found == {
            f"runs/{broken}": "its row cannot be read: its host is not JSON",
            f"runs/{edited}": "changed after it was signed: status: 'failed' recorded, "
            "'succeeded' signed",
        }
    finally:
        _set(ws, "runs", "host", broken, host)
        _set(ws, "runs", "status", edited, status)
    assert _problems(ws) == {}


def test_a_run_moved_to_another_model_is_listed_there_and_named_by_fsck(
    recorded: tuple[Workspace, str, str],
) -> None:
    """``runs list --model`` filters on ``run_facets``, which the database's trigger keeps to
    the row: a model edited in the row lists the run as another model's. The row no longer
    matches what was signed: ``fsck`` names it."""
    from pinbench.evaluator.records.run_filter import NameFilter, RunFilter
    from pinbench.evaluator.records.run_list import list_runs

    ws, run_id, _ = recorded
    model = _set(ws, "runs", "model", run_id, "vision/another")
    try:
        listed = list_runs(ws, where=RunFilter(model=NameFilter("vision/another", None)))
        assert [r["id"] for r in listed] == [run_id]  # what a reader would be shown
        assert "model: 'vision/another' recorded" in _problems(ws)[f"runs/{run_id}"]
    finally:
        _set(ws, "runs", "model", run_id, model)
    assert _problems(ws) == {}


def test_an_attestation_made_before_these_columns_were_signed_is_compared_on_what_it_holds(
    recorded: tuple[Workspace, str, str],
) -> None:
    """A run attested before this round signed none of ``SIGNED_COLUMNS`` in its
    ``results.json``: what that holds is still compared (an edited status is named), and so
    are the start, finish and host its statement's predicate signed; what neither signed
    (who queued it) cannot be."""
    import hashlib

    from pinbench.artifacts.canonical import canonical_json
    from pinbench.db.run_row import read_run
    from pinbench.provenance.records import differs, predicate_columns
    from pinbench.provenance.statement import SIGNED_COLUMNS, results_record, statement_for
    from pinbench.registry.lockfile import Lockfile

    ws, run_id, _ = recorded
    with ws.reads() as rows:
        run = read_run(rows, run_id)
        assert run is not None
        ((body,),) = rows(
            "SELECT body FROM lockfiles WHERE digest = :d", {"d": run.lockfile_digest}
        )
    old = {k: v for k, v in results_record(run).items() if k not in SIGNED_COLUMNS}
    signed = canonical_json(old)
    sha = hashlib.sha256(signed).hexdigest()
    lock = Lockfile.from_bytes(str(body).encode())
    predicate = predicate_columns(statement_for(ws, run, lock, after_the_fact=False))
    assert set(predicate) == {"started_at", "finished_at", "host"}

    def said() -> str | None:
        with ws.reads() as rows:
            return differs(rows, run_id, sha, {sha: signed}.get, predicate)

    assert said() is None
    for column, value, named in (
        ("started_at", "2020-01-01 00:00:00.000000", "started_at: '2020-01-01T00:00:00"),
        ("status", "failed", "status: 'failed' recorded, 'succeeded' signed"),
        ("submitted_by", "mallory", None),  # signed by neither
    ):
        before = _set(ws, "runs", column, run_id, value)
        try:
            found = said()
            assert (found is None) if named is None else (named in (found or "")), found
        finally:
            _set(ws, "runs", column, run_id, before)


def test_a_removed_attestation_and_one_signed_by_another_key_are_named(
    recorded: tuple[Workspace, str, str],
) -> None:
    """An attacker who may write the database and the blob store, not the registry's key:
    removing a run's attestation rows left it checked by nothing, and a newer row pointing at
    an envelope signed by a key of their own over the edited record passed. Both are named."""
    import hashlib

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from pinbench.artifacts.canonical import canonical_json
    from pinbench.db.run_row import read_run
    from pinbench.provenance.dsse import sign
    from pinbench.provenance.key_material import public_of
    from pinbench.provenance.records import UNATTESTED
    from pinbench.provenance.statement import results_record

    ws, run_id, _ = recorded
    with ws.reads() as rows:
        saved = rows(
            f"SELECT {', '.join(ATTESTATION)} FROM attestations WHERE run_id = :r", {"r": run_id}
        )
    with ws.writes() as rows:
        rows("DELETE FROM attestations WHERE run_id = :r", {"r": run_id})
    try:
        assert _problems(ws) == {f"runs/{run_id}": UNATTESTED}
    finally:
        _restore(ws, saved)
    assert _problems(ws) == {}

    with ws.reads() as rows:
        run = read_run(rows, run_id)
    assert run is not None
    forged = {**results_record(run), "status": "failed"}
    results = ws.store.put_bytes(canonical_json(forged))
    statement = {"subject": [{"name": "results.json", "digest": {"sha256": results.hex}}]}
    mine = Ed25519PrivateKey.generate()
    line = sign(canonical_json(statement), mine, public_of(mine).keyid).line()
    envelope = ws.store.put_bytes(line)
    status = _set(ws, "runs", "status", run_id, "failed")
    with ws.writes() as rows:
        rows(
            "INSERT INTO attestations (run_id, envelope_sha256, keyid, after_the_fact, "
            "created_at) VALUES (:r, :e, :k, 1, '2999-01-01 00:00:00.000000')",
            {"r": run_id, "e": envelope.hex, "k": public_of(mine).keyid},
        )
    try:
        assert hashlib.sha256(canonical_json(forged)).hexdigest() == results.hex
        assert _problems(ws) == {
            f"runs/{run_id}": "its attestation is not signed by this registry's keys"
        }
    finally:
        with ws.writes() as rows:
            rows("DELETE FROM attestations WHERE envelope_sha256 = :e", {"e": envelope.hex})
        _set(ws, "runs", "status", run_id, status)
    assert _problems(ws) == {}


ATTESTATION = ("id", "run_id", "envelope_sha256", "keyid", "after_the_fact", "created_at")


def _restore(ws: Workspace, saved: Any) -> None:
    with ws.writes() as rows:
        for row in saved:
            values = dict(zip(ATTESTATION, row, strict=True))
            marks = ", ".join(f":{k}" for k in values)
            rows(f"INSERT INTO attestations ({', '.join(values)}) VALUES ({marks})", values)


def test_a_time_rewritten_as_the_same_instant_in_other_text_is_named(
    recorded: tuple[Workspace, str, str],
) -> None:
    """SQLite orders and filters times as text: ``20260101T000000`` is the same instant as
    the registry's ``2026-01-01 00:00:00.000000`` and sorts after every run of the year. A
    time not in the form the registry writes is named (PostgreSQL keeps instants)."""
    ws, run_id, _ = recorded
    assert ws.settings.database_url.startswith("sqlite")  # the world's home keeps text
    with ws.reads() as rows:
        ((before,),) = rows("SELECT started_at FROM runs WHERE id = :id", {"id": run_id})
    moved = str(before).replace("-", "").replace(" ", "T").replace(":", "")
    _set(ws, "runs", "started_at", run_id, moved)
    try:
        said = _problems(ws)[f"runs/{run_id}"]
        assert said == (
            f"its row cannot be read: its started_at {moved!r} is not in the form the "
            "registry writes"
        )
    finally:
        _set(ws, "runs", "started_at", run_id, before)
    assert _problems(ws) == {}


def test_a_lockfile_whose_body_was_rewritten_is_named_by_fsck(
    recorded: tuple[Workspace, str, str],
) -> None:
    """A run signs its lockfile's digest; a series' settings and ``runs show`` read the body
    kept under it. A body rewritten (canonical still) is named."""
    from pinbench.sdk.registry import Registry

    ws, run_id, _ = recorded
    with ws.reads() as rows:
        ((digest, body),) = rows(
            "SELECT digest, body FROM lockfiles WHERE digest = "
            "(SELECT lockfile_digest FROM runs WHERE id = :id)",
            {"id": run_id},
        )
    rewritten = str(body).replace('"threads":', '"threads": ', 1)
    assert rewritten != body
    with ws.writes() as rows:
        rows("UPDATE lockfiles SET body = :b WHERE digest = :d", {"b": rewritten, "d": digest})
    try:
        with Registry(home=ws.settings.home, database_url=ws.settings.database_url) as reg:
            checked = reg.admin().check_store()
        found = [(p.kind, p.path) for p in checked.problems if p.kind != "unreferenced"]
        assert found == [("lockfile", f"lockfiles/{digest}")]  # (a blob an earlier case left)
    finally:
        with ws.writes() as rows:
            rows("UPDATE lockfiles SET body = :b WHERE digest = :d", {"b": body, "d": digest})
