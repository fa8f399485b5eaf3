"""``pinbench fsck`` and ``pinbench gc --blobs`` (issue 38, decision 144): the blob store
checked against the rows that reference it, and the blobs no row references collected, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pinbench.artifacts.digest import Digest
from pinbench.db.models import Attestation, Run
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.sdk.registry import Registry
from pinbench.workspace import Workspace
from tests.helpers import (
    dataset_manifest,
    in_process_cli,
    run_digits,
    run_doc_block,
    sha,
    write_files,
)

PAGE = Path(__file__).resolve().parent.parent / "docs/operations.md"

FILES = {"x.npy": b"x-bytes", "y.npy": b"y-bytes"}


def _published(ws: Workspace, root: Path) -> None:
    entries = write_files(root, FILES)
    manifest = parse_manifest(dataset_manifest("kept", "1.0.0", entries))
    publish(ws, manifest, manifest_dir=root, publisher="test")


def _orphan(ws: Workspace) -> str:
    """A blob no row references: what an upload cut short by a database outage leaves."""
    return ws.store.put_bytes(b"an upload whose row was never written").hex


def test_fsck_reports_each_kind_of_problem_and_exits_1(
    ws_any: Workspace,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _published(ws_any, tmp_path / "src")
    cli = in_process_cli(monkeypatch, capsys, ws_any.settings.home, database_url)
    clean = cli("fsck")
    assert clean.code == 0, clean.err
    assert (
        clean.out.strip() == f"checked 2 blobs, {sum(map(len, FILES.values()))} bytes: no problems"
    )

    orphan = _orphan(ws_any)
    ws_any.store.path(Digest(sha(b"x-bytes"))).unlink()
    corrupt = ws_any.store.path(Digest(sha(b"y-bytes")))
    corrupt.chmod(0o644)
    corrupt.write_bytes(b"y-bytez")
    (ws_any.store.blobs / "ab").mkdir(exist_ok=True)
    (ws_any.store.blobs / "ab" / "notes.txt").write_text("left by hand")

    found = cli("fsck", "--json")
    assert found.code == 1, found.err
    problems = {(p["kind"], p["path"]) for p in json.loads(found.out)["problems"]}
    assert problems == {
        ("unreferenced", f"blobs/{orphan[:2]}/{orphan}"),
        ("missing", f"blobs/{sha(b'x-bytes')[:2]}/{sha(b'x-bytes')}"),
        ("corrupt", f"blobs/{sha(b'y-bytes')[:2]}/{sha(b'y-bytes')}"),
        ("stray", "blobs/ab/notes.txt"),
    }
    text = cli("fsck")
    assert text.code == 1
    assert f"missing: blobs/{sha(b'x-bytes')[:2]}/{sha(b'x-bytes')}: dataset/kept@1.0.0:x.npy" in (
        text.out
    )
    assert text.out.strip().endswith("4 problems")


def test_a_run_and_its_attestation_reference_every_blob_they_wrote(digits: Workspace) -> None:
    """Latencies, outputs, the attestation's envelope and the results.json its statement names:
    none is unreferenced, so none would be collected."""
    run_id = run_digits(digits)
    with digits.transaction() as session:
        assert (session.scalar(select(func.count()).select_from(Attestation)) or 0) >= 1
        run = session.get(Run, run_id)
        assert run is not None and run.latencies_sha256
    with Registry.over(digits) as reg:
        checked = reg.admin().check_store()
        assert checked.problems == [] and checked.blobs > 0
        assert reg.admin().collect_blobs(grace="0", delete=True).garbage == []
    assert digits.store.has(Digest(run.latencies_sha256))


def test_gc_blobs_is_a_dry_run_until_told_and_spares_young_and_referenced_blobs(
    ws_any: Workspace,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _published(ws_any, tmp_path / "src")
    orphan = _orphan(ws_any)
    cli = in_process_cli(monkeypatch, capsys, ws_any.settings.home, database_url)
    size = len(b"an upload whose row was never written")

    young = cli("gc", "--blobs", "--delete")  # the default grace: 1 h
    assert young.code == 0, young.err
    assert "removed 0 unreferenced blobs, 0 bytes; left 1 younger" in young.out
    dry = cli("gc", "--blobs", "--grace", "0")
    assert dry.code == 0, dry.err
    assert f"would remove {orphan} ({size} bytes" in dry.out
    assert "dry run: nothing removed" in dry.out
    assert ws_any.store.has(Digest(orphan))

    done = cli("gc", "--blobs", "--grace", "0s", "--yes", "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert [b["sha256"] for b in report["blobs"]] == [orphan] and report["removed"] is True
    assert report["bytes"] == size
    left = sorted(d.hex for d in ws_any.store.iter_digests())
    assert left == sorted(sha(d) for d in FILES.values())
    assert cli("fsck").code == 0


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--blobs", "--grace", "5x"], 1, "invalid duration '5x': expected a number"),
        (["--blobs", "--grace", "400d"], 1, "the grace period (s) must be between 0 and"),
        (["--blobs", "--grace", "-1h"], 1, "invalid duration '-1h'"),
        ([], 2, "--grace and --delete go with --blobs"),  # with the --delete every case adds
    ],
    ids=["unknown unit", "over a year", "negative", "delete without blobs"],
)
def test_gc_blobs_refuses_bad_options_and_removes_nothing(
    ws: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    needle: str,
) -> None:
    orphan = _orphan(ws)
    cli = in_process_cli(monkeypatch, capsys, ws.settings.home)
    refused = cli("gc", *args, "--delete")
    assert refused.code == code
    assert needle in refused.err and "Traceback" not in refused.err
    assert [d.hex for d in ws.store.iter_digests()] == [orphan]


def test_gc_blobs_waits_for_the_store_lock_a_publish_holds(ws: Workspace) -> None:
    """A publish makes its blobs visible and writes their rows under ``BlobStore.locked``:
    the collector waits for it, and then sees the rows."""
    orphan = _orphan(ws)
    swept: list[list[str]] = []

    def collect() -> None:
        with Registry.over(ws) as reg:
            done = reg.admin().collect_blobs(grace="0", delete=True)
        swept.append([g.digest for g in done.garbage])

    with ws.store.locked():
        worker = threading.Thread(target=collect)
        worker.start()
        time.sleep(1.0)
        assert worker.is_alive() and swept == []  # held off while the lock is held
    worker.join(30)
    assert swept == [[orphan]]


def test_gc_without_blobs_reclaims_the_staging_folder_too(ws: Workspace) -> None:
    """Scratch a dead process left in the store's own staging folder (``blobs`` on its own
    filesystem) is reclaimed with ``tmp``'s."""
    staging = ws.store.blobs / ".staging" / "tmp"
    staging.mkdir(parents=True)
    owners = staging.parent / "owners"
    owners.mkdir()
    (owners / f"{'a' * 16}.lock").write_text("pid 1\n")  # no process holds it: dead
    (staging / f"stage-{'a' * 16}-deadbeef").write_bytes(b"half a blob")
    with Registry.over(ws) as reg:
        done = reg.admin().reclaim_scratch()
    assert [name for name, _ in done.removed] == [f"stage-{'a' * 16}-deadbeef"]
    assert list(staging.iterdir()) == []
    assert os.listdir(ws.store.blobs) == [".staging"]


def test_the_operations_page_block_finds_collects_and_rechecks(tmp_path: Path) -> None:
    done = run_doc_block(PAGE, "tests/test_store_upkeep.py", tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "unreferenced: blobs/" in done.stdout and "fsck exited 1" in done.stdout
    assert "would remove 1 unreferenced blob, 37 bytes" in done.stdout
    assert "removed 1 unreferenced blob, 37 bytes" in done.stdout
    assert done.stdout.rstrip().endswith("checked 0 blobs, 0 bytes: no problems")
