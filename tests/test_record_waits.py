"""A database that blinks loses no measured run (issue 48 item 1, decision 190), in process on
SQLite: the wait's backoff and its log; a finished run's record kept in the home while the
database is away, its blobs held from ``gc --blobs``, written by the next server's sweep once
its process is gone (and never while it lives); the true reason for the runs a stopped server
left; a heartbeat that sweeps only a lease after an outage; a waiting client told what
happened. The same outage against a real PostgreSQL and a real server is
tests/test_db_outage_runs.py."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from pinbench.api import heartbeat
from pinbench.api.outage import NOT_STARTED, STOPPED
from pinbench.artifacts.digest import Digest
from pinbench.db import pending
from pinbench.db.errors import DatabaseUnavailable
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Run
from pinbench.db.run_record import RunRecord
from pinbench.db.upkeep import check, collect
from pinbench.db.waiting import until_available
from pinbench.evaluator import instances
from pinbench.evaluator import run as run_module
from pinbench.evaluator.records import recording
from pinbench.remote import Remote
from pinbench.remote_errors import StoppedWaiting
from pinbench.retrying import Retrying
from pinbench.workspace import Workspace

DOWN = DatabaseUnavailable("cannot connect to the database sqlite:///x: unable to open")


LOCK_BODY = "{}"
LOCK_DIGEST = hashlib.sha256(LOCK_BODY.encode()).hexdigest()
"""A stored lockfile row of these tests' runs: its body hashes to its digest, as fsck checks."""


def test_a_wait_backs_off_to_its_cap_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    tries: list[int] = []
    waits: list[float] = []
    between: list[int] = []

    def call() -> str:
        tries.append(1)
        if len(tries) <= 7:
            raise DOWN
        return "written"

    with caplog.at_level(logging.WARNING, logger="pinbench.db"):
        got = until_available(
            call, what="run abc's record", pause=waits.append, between=lambda: between.append(1)
        )
    assert got == "written"
    assert waits == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]  # doubled, at most 5 s apart
    assert len(between) == 7
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines  # the first failure and the end, not one line per try
    assert lines[0].startswith("run abc's record waits for the database (cannot connect")
    assert "done once the database was back (8 tries" in lines[1]

    def never() -> None:
        raise DOWN

    stop = iter([False, False, True])
    with pytest.raises(DatabaseUnavailable):
        until_available(never, what="x", pause=lambda _: None, give_up=lambda: next(stop))


def _record(ws: Workspace, run_id: str) -> RunRecord:
    """A succeeded run's record whose latencies and outputs are blobs in the store."""
    latencies = ws.store.put_bytes(f"latencies of {run_id}".encode()).hex
    outputs = ws.store.put_bytes(f"outputs of {run_id}".encode()).hex
    now = datetime.now(UTC)
    columns = {
        "lockfile_digest": LOCK_DIGEST,
        "status": "succeeded",
        "runner": "local",
        "started_at": now - timedelta(seconds=10),
        "finished_at": now,
        "host": {"os": "linux"},
        "system": None,
        "error": None,
        "details": {"outputs_sha256": outputs},
        "environment_digest": None,
        "latencies_sha256": latencies,
        "trace_level": "none",
        "trace_sha256": None,
        "model": "vision/digits",
        "model_version": "1.0.0",
        "framework": "onnxruntime",
        "framework_version": "1.17.0",
    }
    return RunRecord(run_id, columns, (("accuracy_top1", 0.75, "ratio"),))


def _rows(ws: Workspace, gone: str, *runs: tuple[str, str]) -> None:
    """A lockfile row, then ``runs`` (id, status) of server instance ``gone``."""
    with ws.transaction() as session:
        session.add(LockfileRow(digest=LOCK_DIGEST, body=LOCK_BODY, created_at=datetime.now(UTC)))
    _rows_of(ws, gone, *runs)


def _rows_of(ws: Workspace, instance: str, *runs: tuple[str, str]) -> None:
    """``runs`` (id, status) of server instance ``instance``, their lockfile row already there."""
    with ws.transaction() as session:
        for run_id, status in runs:
            session.add(
                Run(
                    id=run_id,
                    lockfile_digest=LOCK_DIGEST,
                    status=status,
                    runner="local",
                    started_at=datetime.now(UTC),
                    host={},
                    instance_id=instance,
                )
            )


def _runs(ws: Workspace) -> dict[str, tuple[str, str | None, dict[str, float]]]:
    with ws.transaction() as session:
        return {
            r.id: (r.status, r.error, {x.metric: x.value for x in r.results})
            for r in session.query(Run)
        }


def test_a_record_the_database_refused_waits_in_the_home_holds_its_blobs_and_is_written_later(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server stopped (or killed) while the database was away: its finished run's record
    waits in the home, gc leaves its blobs, and the next server's sweep writes it, as it
    ended, while the runs it had queued or running get the reason that holds for each."""
    gone = instances.register(ws, lease_s=-60)  # the stopped server: its lease ran out
    _rows(ws, gone, ("queued", "queued"), ("running", "running"), ("measured", "running"))
    record = _record(ws, "measured")
    orphan = ws.store.put_bytes(b"an upload whose row was never written").hex
    said: list[str] = []
    tries: list[int] = []

    def refused(*_: Any) -> bool:
        tries.append(1)
        raise DOWN

    monkeypatch.setattr(recording, "write", refused)
    outcome = recording.record_run(ws, record, said.append, give_up=lambda: len(tries) >= 2)
    assert outcome is recording.Recorded.WAITING
    assert "its record is kept in" in said[0] and "stopped waiting" in said[-1]
    monkeypatch.undo()
    [kept] = pending.kept(ws)
    assert kept.record == record  # the whole record, times and results as they were

    done = collect(ws, grace_s=0, delete=True)  # the database is back, the record not yet
    assert [g.digest for g in done.garbage] == [orphan]
    held = (record.columns["latencies_sha256"], record.columns["details"]["outputs_sha256"])
    assert all(ws.store.has(Digest(digest)) for digest in held)
    assert [p.kind for p in check(ws).problems] == []  # held, not "unreferenced"

    attested: list[str] = []
    monkeypatch.setattr(run_module, "attest_recorded", lambda _ws, rid, _say: attested.append(rid))
    heartbeat.sweep(ws, STOPPED, NOT_STARTED)  # its process (this one) lives: left to it
    assert _runs(ws)["measured"] == ("running", None, {})
    assert _runs(ws)["queued"] == ("interrupted", NOT_STARTED, {})
    assert _runs(ws)["running"] == ("interrupted", STOPPED, {})

    dead = kept.path.with_name(f"{'0' * 16}-measured.json")  # its process gone
    kept.path.rename(dead)
    heartbeat.sweep(ws, STOPPED, NOT_STARTED)
    assert _runs(ws)["measured"] == ("succeeded", None, {"accuracy_top1": 0.75})
    assert attested == ["measured"]
    assert list(pending.kept(ws)) == [] and not dead.exists()
    assert collect(ws, grace_s=0, delete=True).garbage == []  # its row names them now


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data))


def test_only_a_record_file_for_a_dead_servers_unfinished_run_is_written(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anything running as the service user can write ``HOME/pending`` (decision 190,
    amended): a link (to /dev/zero), a FIFO, an oversize file, a record with a status or
    a metric that is not one are set aside unread or refused, without hanging; a record never
    creates a row nor finishes a run whose server lives; only a dead server's unfinished run
    gets its record."""
    dead_owner = "0" * 16  # no process holds this owner's lock
    gone = instances.register(ws, lease_s=-60)
    alive = instances.register(ws, lease_s=600)  # another server, serving now
    _rows(ws, gone, ("mine", "running"))
    _rows_of(ws, alive, ("theirs", "running"))
    where = pending.folder(ws)
    where.mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/zero", where / f"{dead_owner}-zero.json")
    os.mkfifo(where / f"{dead_owner}-fifo.json")
    with open(where / f"{dead_owner}-huge.json", "wb") as huge:
        huge.truncate(pending.MAX_RECORD_BYTES + 1)  # sparse: nothing written
    bad_status = _record(ws, "running1").to_json()
    bad_status["columns"]["status"] = "running"
    _write_json(where / f"{dead_owner}-running1.json", bad_status)
    bad_metric = _record(ws, "metric1").to_json()
    bad_metric["results"] = [["accuracy_top1", "0.75", "ratio"]]
    _write_json(where / f"{dead_owner}-metric1.json", bad_metric)
    for run_id in ("mine", "theirs", "norow"):
        _write_json(where / f"{dead_owner}-{run_id}.json", _record(ws, run_id).to_json())

    attested: list[str] = []
    monkeypatch.setattr(run_module, "attest_recorded", lambda _ws, rid, _say: attested.append(rid))
    started = time.monotonic()
    assert run_module.record_left(ws) == 1
    assert time.monotonic() - started < 30  # nothing waited on
    runs = _runs(ws)
    assert runs["mine"] == ("succeeded", None, {"accuracy_top1": 0.75})
    assert runs["theirs"] == ("running", None, {})  # its server lives: its own to record
    assert set(runs) == {"mine", "theirs"} and attested == ["mine"]  # no row created
    names = {p.name for p in where.iterdir()}
    assert names == {pending.REFUSED, f"{dead_owner}-theirs.json"}  # left for later
    aside = {p.name.split("-", 1)[1] for p in (where / pending.REFUSED).iterdir()}
    assert aside == {
        "zero.json",
        "fifo.json",
        "huge.json",
        "running1.json",
        "metric1.json",
        "norow.json",
    }
    assert (where / pending.REFUSED / f"{dead_owner}-zero.json").is_symlink()


def test_gc_asks_a_blobs_time_again_before_it_removes_it(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing (of a large bucket) is old by the time gc removes what it listed: a blob a
    run wrote again meanwhile, from a machine that does not share this one's lock, stays."""
    digest = ws.store.put_bytes(b"outputs a run wrote again")
    listed = [replace(s, mtime=s.mtime - 7200) for s in ws.store.listing()]  # seen 2 h old
    monkeypatch.setattr(ws.store, "listing", lambda: iter(listed))
    done = collect(ws, grace_s=3600, delete=True)
    assert (done.garbage, done.young) == ([], 1)
    assert ws.store.has(digest)


def test_after_an_outage_the_heartbeat_renews_at_once_and_sweeps_a_lease_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every server's renewals stopped while the database was away: a lease that lapsed
    then says nothing of its server, so no sweep until all have had a lease to renew."""
    lease = instances.Lease(0.6)  # renewed every 0.1 s, swept every 0.2 s
    down_until = time.monotonic() + 0.3
    renewed: list[float] = []
    swept: list[float] = []

    def renew(*_: Any, **__: Any) -> None:
        if time.monotonic() < down_until:
            raise DOWN
        renewed.append(time.monotonic())

    monkeypatch.setattr(instances, "renew", renew)
    monkeypatch.setattr(heartbeat, "sweep", lambda *_: swept.append(time.monotonic()))

    class Pool:
        ws: Any = None
        instance = "0" * 32

        def __init__(self) -> None:
            self.lease = lease

        def counts(self) -> tuple[int, int]:
            return 0, 0

        def stop_run(self, run_id: str, reason: str) -> bool:
            return False

    quit = threading.Event()
    beating = threading.Thread(target=heartbeat.beat, args=(Pool(), quit, STOPPED, NOT_STARTED))
    beating.start()
    time.sleep(1.4)
    quit.set()
    beating.join()
    back = renewed[0]
    assert back - down_until < 0.3  # renewed as soon as it could
    assert swept, "it sweeps again"
    assert min(swept) - back >= lease.lease_s - 0.05  # not before every server renewed


def _remote(answers: list[httpx.Response], notices: list[str]) -> Remote:
    remote = Remote(
        "http://pinbench.test",
        "pbt_x",
        retrying=Retrying(total_s=0.5, first_s=0.05, cap_s=0.1),
        notice=notices.append,
    )

    def answer(request: httpx.Request) -> httpx.Response:
        return answers.pop(0) if len(answers) > 1 else answers[0]

    remote.client.close()
    remote.client = httpx.Client(base_url=remote.url, transport=httpx.MockTransport(answer))
    return remote


def _unavailable() -> httpx.Response:
    body = {
        "status": 503,
        "detail": "cannot connect to the database postgresql+psycopg://pb@db/pb: refused",
        "error": "DatabaseUnavailable",
    }
    return httpx.Response(503, json=body, headers={"content-type": "application/problem+json"})


def test_a_client_waiting_on_a_run_is_told_the_database_is_away_and_stops_naming_the_run() -> None:
    run_id = "6b1f3c1e-0000-4000-8000-000000000001"
    running = httpx.Response(200, json={"id": run_id, "status": "running"})
    notices: list[str] = []
    said: list[str] = []
    remote = _remote([running, _unavailable()], notices)
    t0 = time.monotonic()
    with pytest.raises(StoppedWaiting) as stopped:
        remote.wait(run_id, said.append, poll_s=0.01)
    assert time.monotonic() - t0 < 10  # bounded: PINBENCH_RETRY_S (here 0.5 s)
    message = str(stopped.value)
    assert message.startswith(f"stopped waiting for run {run_id} (last seen running): ")
    assert "the server's database is unavailable" in message
    assert f"`pinbench runs show {run_id}` (PINBENCH_URL=http://pinbench.test)" in message
    assert notices and all("says its database is unavailable" in n for n in notices)
    assert "cannot connect to the database postgresql+psycopg://pb@db/pb" in notices[0]

    finished = httpx.Response(200, json={"id": run_id, "status": "succeeded"})
    back = _remote([running, _unavailable(), _unavailable(), finished], [])
    assert back.wait(run_id, said.append, poll_s=0.01)["status"] == "succeeded"


def test_a_wait_with_a_progress_sink_says_each_line_once(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 72, item 5: a local run printed each "waits for the blob store" line twice, once
    through its progress and once through the log's last-resort handler on the same terminal."""
    tries: list[int] = []

    def call() -> str:
        tries.append(1)
        if len(tries) <= 2:
            raise DOWN
        return "stored"

    said: list[str] = []
    with caplog.at_level(logging.DEBUG):
        got = until_available(call, what="run abc's blob", pause=lambda _: None, say=said.append)
    assert got == "stored"
    assert [line.split(" (")[0] for line in said] == [
        "run abc's blob waits for the database",
        "run abc's blob: done once the database was back",
    ]
    assert caplog.records == []  # not logged beside: the log's handler printed it again
    assert capsys.readouterr().err == ""
