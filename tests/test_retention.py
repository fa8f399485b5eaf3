"""``pinbench runs delete`` and ``pinbench runs prune`` (issue 38, decision 149): rows go,
blobs stay until ``pinbench gc --blobs``, which then removes exactly the deleted runs' own
blobs; on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from pinbench.artifacts.digest import Digest
from pinbench.config import Settings
from pinbench.db.models import Attestation, Result, Run
from pinbench.db.upkeep import references
from pinbench.evaluator.records.retention import InvalidRetention
from pinbench.evaluator.run import queue_run, run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.sdk.registry import Registry
from pinbench.workspace import Workspace
from tests.helpers import DIGITS_ACCURACY, in_process_cli


@pytest.fixture
def digits_any(tmp_path: Path, catalog_dir: Path, database_url: str) -> Iterator[Workspace]:
    """The digits catalog published on each engine."""
    ws = Workspace(Settings(home=tmp_path / "home", database_url=database_url))
    ws.init()
    for path in sorted(catalog_dir.glob("*.yaml")):
        publish(ws, load_manifest(path), manifest_dir=catalog_dir, publisher="test")
    yield ws
    ws.close()


def _run(ws: Workspace, request: dict[str, Any], *, trace: str = "none") -> str:
    lock = service.lock(ws, parse_request(request))[0]
    outcome = run_lockfile(ws, lock, runner="local", say=lambda _: None, trace=trace)
    assert outcome.status == "succeeded", outcome
    return outcome.id


def _started(ws: Workspace, run_id: str, days_ago: float) -> None:
    """Age a run: its start moved back, and (a finished run's start is signed, issue 84) its
    record signed again as it now is, as an operator backfilling old runs would."""
    from pinbench.provenance.attest import attest_run

    when = datetime.now(UTC) - timedelta(days=days_ago)
    with ws.transaction() as session:
        session.execute(update(Run).where(Run.id == run_id).values(started_at=when))
        finished = session.get(Run, run_id)
        signed = finished is not None and finished.status in ("succeeded", "failed")
    if signed:
        attest_run(ws, run_id, after_the_fact=True)


def _queued(ws: Workspace, days_ago: float) -> str:
    lock = service.lock(ws, parse_request(DIGITS_ACCURACY))[0]
    run_id = str(uuid.uuid4())
    queue_run(ws, lock, runner="local", run_id=run_id)
    _started(ws, run_id, days_ago)
    return run_id


def _count(ws: Workspace, model: type[Run] | type[Result] | type[Attestation], run: str) -> int:
    column = model.id if model is Run else model.run_id  # type: ignore[union-attr]
    with ws.transaction() as session:
        return int(session.scalar(select(func.count()).where(column == run)) or 0)


SMALL = {**DIGITS_ACCURACY, "scenario": {"mode": "accuracy", "sample_count": 50}}
"""Another lockfile: its outputs (50 samples') are its own run's alone."""


def test_prune_then_gc_removes_the_deleted_runs_blobs_and_nothing_the_rest_need(
    digits_any: Workspace,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = digits_any
    lone = _run(ws, SMALL, trace="model")  # its lockfile's only run: kept by --keep-last 1
    oldest, older, newest = (_run(ws, DIGITS_ACCURACY) for _ in range(3))
    for run_id, days in ((lone, 50), (oldest, 40), (older, 35), (newest, 1)):
        _started(ws, run_id, days)
    queued = _queued(ws, 90)  # never deleted, however old
    with ws.reads() as read:
        blobs_before = set(references(read, ws.store))
    with ws.transaction() as session:
        rows = {r.id: r for r in session.scalars(select(Run)).all()}
    own = {r: {rows[r].latencies_sha256} for r in (lone, oldest, older, newest)}
    assert rows[lone].trace_sha256 and len(set().union(*own.values())) == 4
    cli = in_process_cli(monkeypatch, capsys, ws.settings.home, database_url)

    dry = cli("runs", "prune", "--keep-days", "30", "--keep-last", "1")
    assert dry.code == 0, dry.err
    assert f"would delete run {oldest} succeeded" in dry.out
    assert f"would delete run {older} succeeded" in dry.out
    assert "would delete 2 runs; kept 2 finished" in dry.out and "dry run" in dry.out
    assert _count(ws, Run, oldest) == 1  # a dry run deletes nothing
    everything = json.loads(
        cli("runs", "prune", "--keep-days", "0", "--keep-last", "0", "--json").out
    )
    assert sorted(r["id"] for r in everything["runs"]) == sorted([lone, oldest, older, newest])

    done = cli("runs", "prune", "--keep-days", "30", "--keep-last", "1", "--yes", "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["deleted"] is True and report["kept"] == 2
    assert [r["id"] for r in report["runs"]] == [oldest, older]  # oldest first
    for gone in (oldest, older):
        assert _count(ws, Run, gone) == _count(ws, Result, gone) == 0
        assert _count(ws, Attestation, gone) == 0
    assert _count(ws, Run, queued) == 1 and _count(ws, Result, newest) > 0

    # the blobs stay until gc; gc then removes the deleted runs' own, nothing shared
    for gone in (oldest, older):
        assert ws.store.has(Digest(str(rows[gone].latencies_sha256)))
    swept = cli("gc", "--blobs", "--delete", "--grace", "0", "--json")
    assert swept.code == 0, swept.err
    removed = {b["sha256"] for b in json.loads(swept.out)["blobs"]}
    for gone in (oldest, older):
        assert str(rows[gone].latencies_sha256) in removed
        assert not ws.store.has(Digest(str(rows[gone].latencies_sha256)))
    with ws.reads() as read:
        blobs_now = set(references(read, ws.store))
    assert blobs_now <= blobs_before and removed == blobs_before - blobs_now
    assert all(ws.store.has(Digest(d)) for d in blobs_now)

    # the lone run goes by name: its trace and its outputs go with gc, and no blob another
    # run shares (LoadGen's logs of two runs can be the same bytes)
    lone_blobs = {d for d, label in _labels(ws).items() if label.startswith(f"run {lone} ")}
    assert str(rows[lone].trace_sha256) in lone_blobs and len(lone_blobs) >= 4
    referenced = set(_labels(ws))
    assert cli("runs", "delete", lone[:8], "--yes").code == 0
    still = set(_labels(ws))
    swept = cli("gc", "--blobs", "--delete", "--grace", "0", "--json")
    removed = {b["sha256"] for b in json.loads(swept.out)["blobs"]}
    assert removed == referenced - still
    assert {str(rows[lone].trace_sha256), str(rows[lone].latencies_sha256)} <= removed

    # what remains still shows, verifies, reports and checks out
    assert cli("fsck").code == 0
    with Registry(home=ws.settings.home, database_url=database_url) as reg:
        kept = reg.run(newest)
        assert kept.metrics["top1"] > 0.5 and len(kept.latencies()) > 0
        assert kept.lockfile().verify()
        assert b"<html" in reg.report([newest], ["html"])["html"].lower()
        assert kept.attestation() is not None
    assert cli("runs", "show", newest).code == 0
    assert cli("rerun", newest).code == 0


def _labels(ws: Workspace) -> dict[str, str]:
    with ws.reads() as read:
        return references(read, ws.store)


def test_delete_is_all_or_nothing_and_never_takes_an_unfinished_run(
    digits_any: Workspace,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = digits_any
    done = _run(ws, DIGITS_ACCURACY)
    queued = _queued(ws, 10)
    cli = in_process_cli(monkeypatch, capsys, ws.settings.home, database_url)

    refused = cli("runs", "delete", done, queued, "--yes")
    assert refused.code == 1 and "Traceback" not in refused.err
    assert f"run {queued} is queued: a queued or running run is never deleted" in refused.err
    unknown = cli("runs", "delete", done, "abc123", "--yes")
    assert unknown.code == 1 and "no run 'abc123'" in unknown.err
    bad = cli("runs", "delete", "'; drop table runs; --", "--yes")
    assert bad.code == 1 and "a run id, or its prefix" in bad.err
    assert _count(ws, Run, done) == 1 and _count(ws, Result, done) > 0
    assert _count(ws, Run, queued) == 1

    dry = cli("runs", "delete", done)
    assert dry.code == 0 and f"would delete run {done}" in dry.out and "dry run" in dry.out
    assert _count(ws, Run, done) == 1
    gone = cli("runs", "delete", done, done[:6], "--yes")  # the same run twice: once
    assert gone.code == 0 and "deleted 1 run" in gone.out
    assert _count(ws, Run, done) == 0 and _count(ws, Result, done) == 0
    with ws.transaction() as session:  # prune skips it too, however old
        assert session.scalar(select(Run.status).where(Run.id == queued)) == "queued"


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--keep-days", "-1", "--keep-last", "1"], 2, "-1.0 is not in the range 0<=x<=36500"),
        (["--keep-days", "1", "--keep-last", "1000001"], 2, "not in the range 0<=x<=1000000"),
        # Click's FloatRange lets nan through; the API's bound refuses it
        (["--keep-days", "nan", "--keep-last", "1"], 1, "--keep-days must be between 0 and"),
        (["--keep-last", "1"], 2, "Missing option '--keep-days'"),
    ],
    ids=["negative days", "too many", "not a number", "days missing"],
)
def test_prune_refuses_bad_options(
    ws: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    needle: str,
) -> None:
    cli = in_process_cli(monkeypatch, capsys, ws.settings.home)
    refused = cli("runs", "prune", *args, "--yes")
    assert refused.code == code, refused
    assert needle in refused.err and "Traceback" not in refused.err


def test_the_api_bounds_what_the_cli_bounds(ws: Workspace) -> None:
    with Registry.over(ws) as reg, pytest.raises(InvalidRetention, match="--keep-days must be"):
        reg.admin().prune_runs(keep_days=float("inf"), keep_last=1)
    with Registry.over(ws) as reg, pytest.raises(InvalidRetention, match="--keep-last must be"):
        reg.admin().prune_runs(keep_days=1, keep_last=-1)


def test_through_a_server_url_deletion_is_refused_as_local_only(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = in_process_cli(monkeypatch, capsys, ws.settings.home)
    monkeypatch.setenv("PINBENCH_URL", "http://127.0.0.1:9")
    for args in (["delete", "0123", "--yes"], ["prune", "--keep-days", "1", "--keep-last", "1"]):
        refused = cli("runs", *args)
        assert refused.code == 1, refused
        assert "works on a local registry only; this one is the server at" in refused.err
