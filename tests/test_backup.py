"""``pinbench backup`` and ``pinbench restore`` (issue 38, decision 149) on SQLite and on a
real PostgreSQL: a restored registry shows, verifies and runs its recorded lockfiles again;
a damaged backup or a target that is not empty is refused before anything is written."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from pinbench.config import Settings
from pinbench.db.dumps import ToolMissing, pg_tool, sqlite_tables
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.conftest import _fresh_pg_database
from tests.helpers import in_process_cli, lock_digits, run_digits, run_doc_block

PAGE = Path(__file__).resolve().parent.parent / "docs/operations.md"


@pytest.fixture
def source(tmp_path: Path, catalog_dir: Path, database_url: str) -> Iterator[Workspace]:
    """The digits catalog published and run once, on each engine."""
    ws = Workspace(Settings(home=tmp_path / "home", database_url=database_url))
    ws.init()
    for path in sorted(catalog_dir.glob("*.yaml")):
        publish(ws, load_manifest(path), manifest_dir=catalog_dir, publisher="test")
    yield ws
    ws.close()


def _empty_target(request: pytest.FixtureRequest, root: Path, database_url: str) -> str:
    """An empty database of the source's kind for the restored registry."""
    if database_url.startswith("sqlite"):
        return f"sqlite:///{root / 'restored.db'}"
    return _fresh_pg_database(request.getfixturevalue("pg_server"))


def _tables(url: str) -> list[str]:
    if url.startswith("sqlite:///"):
        return sqlite_tables(Path(url.removeprefix("sqlite:///")))
    engine = create_engine(url)
    try:
        return inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_a_restored_registry_shows_verifies_and_runs_its_lockfile_again(
    source: Workspace,
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id = run_digits(source)
    lockfile = lock_digits(source, tmp_path / "digits.lock")
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    made = cli("backup", str(tmp_path / "backup"), "--json")
    assert made.code == 0, made.err
    report = json.loads(made.out)
    # copies, never links (issue 71): a blob rewritten in the home leaves the backup as taken
    assert report["blobs"] > 5 and report["linked"] == 0 and report["copied"] == report["blobs"]
    backed = tmp_path / "backup" / "blobs"
    assert all(p.stat().st_nlink == 1 for p in backed.glob("*/*"))
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert manifest["format"] == "pinbench-backup/2"
    assert {b["sha256"] for b in manifest["blobs"]} == {
        p.name for p in (tmp_path / "backup" / "blobs").glob("*/*")
    }
    assert oct((tmp_path / "backup" / "keys").stat().st_mode & 0o777) == "0o700"
    hashed = {  # every file of the backup but the manifest, with its sha256 (decision 181)
        manifest["database"]["file"]: manifest["database"]["sha256"],
        **{f"blobs/{b['sha256'][:2]}/{b['sha256']}": b["sha256"] for b in manifest["blobs"]},
        **{f"keys/{k['name']}": k["sha256"] for k in manifest["keys"]},
    }
    held = {
        p.relative_to(tmp_path / "backup").as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (tmp_path / "backup").rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }
    assert held == hashed and manifest["keys"]

    target_url = _empty_target(request, tmp_path, database_url)
    target = tmp_path / "restored-home"
    cli = in_process_cli(monkeypatch, capsys, target, target_url)
    restored = cli("restore", str(tmp_path / "backup"))
    assert restored.code == 0, restored.err
    assert restored.out.strip().endswith("no problems")
    assert cli("fsck").code == 0
    shown = cli("runs", "show", run_id, "--json")
    assert shown.code == 0 and json.loads(shown.out)["status"] == "succeeded"
    assert cli("verify", str(lockfile)).code == 0
    again = cli("rerun", run_id, "--json")
    assert again.code == 0, again.err
    for key in manifest["keys"]:  # the same signing keys: attestations verify as before
        name = key["name"]
        assert (target / "keys" / name).read_bytes() == (
            source.settings.home / "keys" / name
        ).read_bytes()
    assert cli("run", str(lockfile)).code == 0


def test_a_run_recorded_before_its_graph_was_stored_does_not_block_a_backup(
    source: Workspace,
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 48 item 2 (decision 180): a graph-optimization run recorded before the optimized
    graph was stored holds ``transform.graph_sha256`` of bytes never kept; its home passes
    fsck, backs up and restores, and its details stay as recorded."""
    from pinbench.db.models import Run

    run_id = run_digits(source)
    legacy = {"transform": "graph_optimization=all", "graph_sha256": "b1" * 32}
    with source.transaction() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.details = {**(run.details or {}), "transform": legacy}
    # as such a run was: signed as recorded (by an attestation made after the fact), so that
    # fsck's check of records against what was signed for them holds
    from pinbench.provenance.attest import attest_run

    attest_run(source, run_id, after_the_fact=True)
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    checked = cli("fsck")
    assert checked.code == 0, checked.out
    assert cli("backup", str(tmp_path / "backup")).code == 0
    target = in_process_cli(
        monkeypatch, capsys, tmp_path / "restored", _empty_target(request, tmp_path, database_url)
    )
    restored = target("restore", str(tmp_path / "backup"))
    assert restored.code == 0 and restored.out.strip().endswith("no problems"), restored.out
    shown = json.loads(target("runs", "show", run_id, "--json").out)
    assert shown["details"]["transform"] == legacy


def test_a_corrupted_blob_in_the_backup_is_named_and_nothing_is_written(
    source: Workspace,
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    assert cli("backup", str(tmp_path / "backup")).code == 0
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    victim = manifest["blobs"][-1]["sha256"]
    damaged = tmp_path / "backup" / "blobs" / victim[:2] / victim
    content = damaged.read_bytes()
    damaged.unlink()  # a hard link to the live store: replaced, not written through
    damaged.write_bytes(content[:-1] + bytes([content[-1] ^ 1]))

    target_url = _empty_target(request, tmp_path, database_url)
    target = tmp_path / "restored-home"
    cli = in_process_cli(monkeypatch, capsys, target, target_url)
    refused = cli("restore", str(tmp_path / "backup"))
    assert refused.code == 1 and "Traceback" not in refused.err
    assert f"the backup's file blobs/{victim[:2]}/{victim} hashes to " in refused.err
    assert f"not to its sha256 {victim}: the backup is damaged" in refused.err
    assert "nothing was restored" in refused.err
    assert not target.exists() and _tables(target_url) == []
    source_cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    assert source_cli("fsck").code == 0  # the live store was not touched


def test_a_damaged_database_file_is_refused_before_anything_is_written(
    source: Workspace,
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    assert cli("backup", str(tmp_path / "backup")).code == 0
    dump = next(p for p in (tmp_path / "backup").iterdir() if p.name.startswith("database."))
    with dump.open("r+b") as f:  # a flipped byte in the middle of the dump
        f.seek(dump.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    target_url = _empty_target(request, tmp_path, database_url)
    target = tmp_path / "restored-home"
    cli = in_process_cli(monkeypatch, capsys, target, target_url)
    refused = cli("restore", str(tmp_path / "backup"))
    assert refused.code == 1 and "Traceback" not in refused.err
    assert f"the backup's file {dump.name} hashes to " in refused.err
    assert not target.exists() and _tables(target_url) == []


def test_a_backup_missing_a_referenced_blob_fails_and_leaves_no_folder(
    source: Workspace,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blob = next(source.store.iter_digests())
    source.store.remove(blob)
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    failed = cli("backup", str(tmp_path / "backup"))
    assert failed.code == 1 and "Traceback" not in failed.err
    assert f"(sha256 {blob.hex}) is missing from the store" in failed.err
    assert not (tmp_path / "backup").exists()


def test_restore_refuses_a_target_that_is_not_empty_and_changes_nothing(
    source: Workspace,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    assert cli("backup", str(tmp_path / "backup")).code == 0
    before = sorted(os.listdir(source.store.blobs))
    refused = cli("restore", str(tmp_path / "backup"))
    assert refused.code == 1 and "the target database is not empty" in refused.err
    assert sorted(os.listdir(source.store.blobs)) == before
    again = cli("backup", str(tmp_path / "backup"))
    assert again.code == 1 and "the folder is not empty" in again.err
    assert (tmp_path / "backup" / "manifest.json").is_file()  # the first backup kept whole
    no_backup = cli("restore", str(tmp_path))
    assert no_backup.code == 1 and "no manifest.json: not a pinbench backup" in no_backup.err
    # a regular file as DIR: each command's own one-line refusal (exit 1), the file as it was
    # (before, Click's usage error, exit 2, for both)
    plain = tmp_path / "notes.txt"
    plain.write_bytes(b"kept")
    for command in ("backup", "restore"):
        file_refused = cli(command, str(plain))
        assert file_refused.code == 1, (command, file_refused.err)
        assert f"error: {plain}: not a folder" in file_refused.err
        assert file_refused.err.count("\n") == 1 and "Usage" not in file_refused.err
        assert plain.read_bytes() == b"kept"
    # a folder backup cannot make: a link to nothing (was a FileExistsError traceback), a
    # path under a regular file; refused in one line, nothing made
    dangling = tmp_path / "gone"
    dangling.symlink_to(tmp_path / "nowhere")
    for target, why in (
        (dangling, "which does not exist"),
        (plain / "sub", "cannot be made"),
    ):
        made = cli("backup", str(target))
        assert made.code == 1 and why in made.err and "Traceback" not in made.err, made.err
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()


def test_no_blobs_lists_them_and_restore_checks_the_ones_the_operator_put_back(
    source: Workspace,
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import shutil

    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    made = cli("backup", str(tmp_path / "backup"), "--no-blobs", "--json")
    assert made.code == 0, made.err
    assert not (tmp_path / "backup" / "blobs").exists()
    listed = json.loads((tmp_path / "backup" / "manifest.json").read_text())["blobs"]

    target = tmp_path / "restored-home"
    target_url = _empty_target(request, tmp_path, database_url)
    cli = in_process_cli(monkeypatch, capsys, target, target_url)
    missing = cli("restore", str(tmp_path / "backup"))
    assert missing.code == 1 and "is missing (it should hash to sha256" in missing.err
    assert _tables(target_url) == []
    shutil.copytree(source.store.blobs, target / "blobs")  # the operator's own snapshot
    done = cli("restore", str(tmp_path / "backup"), "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["blobs"] == len(listed) and report["check"]["problems"] == []


def test_a_missing_postgresql_tool_is_named() -> None:
    with pytest.raises(
        ToolMissing, match=r"pg_nonesuch is not installed in the system's folders \(/usr/lib/"
    ):
        pg_tool("pg_nonesuch")


def test_the_operations_page_block_backs_up_and_restores(tmp_path: Path) -> None:
    done = run_doc_block(PAGE, "tests/test_backup.py", tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "backed up the sqlite database" in done.stdout
    assert "restored the sqlite database" in done.stdout
    assert done.stdout.rstrip().endswith("no problems")
