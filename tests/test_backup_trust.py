"""What a backup holds is hashed when it is taken and checked in full before a restore writes
anything; nothing outside the backup is followed (DESIGN.md invariant 14; issue 48 items 3
and 4, decision 181). Each hole the operator's trial found, as a case: the backup or restore
is refused naming what is wrong, and the target (or the backup's folder) is left untouched."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pinbench.workspace import Workspace
from tests.helpers import Cli, in_process_cli, run_digits
from tests.test_backup import _empty_target, _tables, source  # noqa: F401 (a fixture)

SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
"""Cases that do not depend on the database's kind run on SQLite only."""
Manifest = dict[str, Any]


def _backup(ws: Workspace, url: str, folder: Path, mp: pytest.MonkeyPatch, cap: Any) -> Manifest:
    made = in_process_cli(mp, cap, ws.settings.home, url)("backup", str(folder))
    assert made.code == 0, made.err
    manifest: Manifest = json.loads((folder / "manifest.json").read_text())
    return manifest


def _blob(folder: Path, digest: str) -> Path:
    return folder / "blobs" / digest[:2] / digest


def _replaced_key(folder: Path, manifest: Manifest) -> str:
    entry = manifest["keys"][0]
    name = entry if isinstance(entry, str) else entry["name"]  # format 1 named keys only
    key = folder / "keys" / name
    key.unlink()
    key.write_bytes(os.urandom(32))  # another private key of the same shape
    return f"the backup's file keys/{name} hashes to "


def _linked_key(folder: Path, manifest: Manifest) -> str:
    outside = folder.parent / "outside-secret"
    outside.write_text("a file outside the backup")
    (folder / "keys" / "extra").symlink_to(outside)
    return "keys/extra is a symbolic link: a backup holds none"


def _linked_blob(folder: Path, manifest: Manifest) -> str:
    digest = manifest["blobs"][0]["sha256"]
    outside = folder.parent / "outside-blob"
    shutil.copyfile(_blob(folder, digest), outside)  # the right bytes, but outside the backup
    _blob(folder, digest).unlink()
    _blob(folder, digest).symlink_to(outside)
    return f"blobs/{digest[:2]}/{digest} is a symbolic link: a backup holds none"


def _stray_blob(folder: Path, manifest: Manifest) -> str:
    digest = manifest["blobs"][0]["sha256"]
    (folder / "blobs" / digest[:2] / "notes.txt").write_text("not a blob")
    return f"blobs/{digest[:2]}/notes.txt is not in its manifest.json"


def _stray_file(folder: Path, manifest: Manifest) -> str:
    (folder / "extra.sqlite").write_bytes(b"anything")
    return "extra.sqlite is not in its manifest.json: a backup holds only what it lists"


def _linked_manifest(folder: Path, manifest: Manifest) -> str:
    real = folder.parent / "manifest-elsewhere.json"
    (folder / "manifest.json").rename(real)
    (folder / "manifest.json").symlink_to(real)
    return "manifest.json cannot be read: manifest.json is a symbolic link"


TAMPERED: list[tuple[str, Callable[[Path, Manifest], str]]] = [
    # (case, how the backup is changed after it was made -> what the refusal must say)
    ("a replaced signing key restored with 'no problems'", _replaced_key),
    ("a symbolic link under keys/ copied an outside file in", _linked_key),
    ("a blob that is a symbolic link was linked into the store", _linked_blob),
    ("a stray non-digest file in the backup's blobs/", _stray_blob),
    ("a file the manifest does not list", _stray_file),
    ("a manifest that is a symbolic link", _linked_manifest),
]


@SQLITE
@pytest.mark.parametrize(("case", "tamper"), TAMPERED, ids=[c for c, _ in TAMPERED])
def test_a_tampered_backup_is_refused_before_anything_is_written(
    source: Workspace,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
    tamper: Callable[[Path, Manifest], str],
) -> None:
    run_digits(source)
    folder = tmp_path / "backup"
    needle = tamper(folder, _backup(source, database_url, folder, monkeypatch, capsys))
    target_url = _empty_target(request, tmp_path, database_url)
    target = tmp_path / "restored-home"
    refused = in_process_cli(monkeypatch, capsys, target, target_url)("restore", str(folder))
    assert refused.code == 1, (case, refused.out)
    assert needle in refused.err, (case, refused.err)
    assert "Traceback" not in refused.err
    assert not target.exists() and _tables(target_url) == []  # nothing written, no temp file


def test_a_blob_the_database_references_but_the_backup_lacks_is_found_before_writing(
    source: Workspace,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Missing from the manifest's list and from its folder: the dump itself is read (SQLite's
    file, PostgreSQL's through pg_restore) before anything is written."""
    run_id = run_digits(source)
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    latencies = json.loads(cli("runs", "show", run_id, "--json").out)["latencies_sha256"]
    folder = tmp_path / "backup"
    manifest = _backup(source, database_url, folder, monkeypatch, capsys)
    manifest["blobs"] = [b for b in manifest["blobs"] if b["sha256"] != latencies]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _blob(folder, latencies).unlink()
    target_url = _empty_target(request, tmp_path, database_url)
    target = tmp_path / "restored-home"
    refused = in_process_cli(monkeypatch, capsys, target, target_url)("restore", str(folder))
    assert refused.code == 1 and "Traceback" not in refused.err
    assert (
        f"its database references blob {latencies} (run {run_id} latencies), which its "
        "manifest.json does not list (1 such blobs): the backup is incomplete"
    ) in refused.err
    assert not target.exists() and _tables(target_url) == []


@SQLITE
def test_a_corrupted_blob_in_the_store_fails_the_backup_naming_it(
    source: Workspace,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 48 item 3: the backup hashes each blob it takes; it used to link it unread, exit
    0, and make a backup that could not be restored."""
    run_id = run_digits(source)
    cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    latencies = json.loads(cli("runs", "show", run_id, "--json").out)["latencies_sha256"]
    blob = _blob(source.settings.home, latencies)
    blob.chmod(0o644)
    with blob.open("r+b") as f:  # one flipped byte, in place
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 1]))
    failed = cli("backup", str(tmp_path / "backup"))
    assert failed.code == 1 and "Traceback" not in failed.err
    assert f"blobs/{latencies[:2]}/{latencies} (run {run_id} latencies) hashes to " in failed.err
    assert "no backup was made. Run `pinbench fsck`" in failed.err
    assert not (tmp_path / "backup").exists()
    checked = cli("fsck")  # what the message sends the operator to names it too
    assert checked.code == 1 and f"corrupt: blobs/{latencies[:2]}/{latencies}" in checked.out


@SQLITE
@pytest.mark.parametrize("inside", ["blobs/ab", "blobs", "", "keys"])
def test_a_backup_into_the_home_or_its_blob_store_is_refused(
    source: Workspace,  # noqa: F811
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    inside: str,
) -> None:
    """Private keys landed in ``blobs/`` (a stray there, as fsck says), and the blobs linked
    into the store again."""
    home = source.settings.home
    before = sorted(str(p) for p in home.rglob("*"))
    folder = home / inside / "backup-1"
    refused = in_process_cli(monkeypatch, capsys, home, database_url)("backup", str(folder))
    assert refused.code == 1 and "Traceback" not in refused.err
    assert f"{folder}: it is inside the home ({home})" in refused.err
    assert sorted(str(p) for p in home.rglob("*")) == before  # nothing made


@SQLITE
def test_a_stray_file_in_the_target_blob_store_is_named(
    source: Workspace,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "backup"
    _backup(source, database_url, folder, monkeypatch, capsys)
    target = tmp_path / "restored-home"
    (target / "blobs" / "ab").mkdir(parents=True)
    (target / "blobs" / "ab" / "notes.txt").write_text("left by hand")
    target_url = _empty_target(request, tmp_path, database_url)
    refused = in_process_cli(monkeypatch, capsys, target, target_url)("restore", str(folder))
    assert refused.code == 1 and "invalid sha256 digest" not in refused.err
    assert "the target home's blobs/ab/notes.txt is not a blob: restore into an empty home" in (
        refused.err
    )
    assert sorted(p.name for p in target.rglob("*")) == ["ab", "blobs", "notes.txt"]
    assert _tables(target_url) == []


@SQLITE
def test_a_format_1_backup_still_restores_and_says_its_keys_were_not_hashed(
    source: Workspace,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A backup made before decision 181 named its keys only: it restores, every other check
    made, and the restore says which keys it could not check."""
    run_id = run_digits(source)
    folder = tmp_path / "backup"
    manifest = _backup(source, database_url, folder, monkeypatch, capsys)
    names = [k["name"] for k in manifest["keys"]]
    old = {**manifest, "format": "pinbench-backup/1", "keys": names}
    (folder / "manifest.json").write_text(json.dumps(old))
    target = tmp_path / "restored-home"
    cli: Cli = in_process_cli(
        monkeypatch, capsys, target, _empty_target(request, tmp_path, database_url)
    )
    restored = cli("restore", str(folder))
    assert restored.code == 0, restored.err
    assert f"note: keys {', '.join(names)} restored unchecked: this format-1 backup" in (
        restored.out.replace("\n", " ")
    )
    assert restored.out.strip().endswith("no problems")
    assert json.loads(cli("runs", "show", run_id, "--json").out)["status"] == "succeeded"


@SQLITE
def test_a_backup_takes_the_keys_as_plain_files_only(
    source: Workspace,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A key being written (``.NAME.XXXX``, left by a crash) is not taken: its name is none a
    restore accepts. A key that is a symbolic link refuses the backup (the key loader refuses it
    too), naming it."""
    from pinbench.provenance.keys import signing_key

    signing_key(source)  # the registry's first key, made on first use
    keys = source.settings.home / "keys"
    (keys / ".signing.ed25519.0123abcd").write_bytes(os.urandom(32))
    manifest = _backup(source, database_url, tmp_path / "backup", monkeypatch, capsys)
    names = [k if isinstance(k, str) else k["name"] for k in manifest["keys"]]
    assert names == ["signing.ed25519"]
    cli = in_process_cli(
        monkeypatch, capsys, tmp_path / "restored", _empty_target(request, tmp_path, database_url)
    )
    assert cli("restore", str(tmp_path / "backup")).code == 0
    (keys / "linked").symlink_to(tmp_path / "restored" / "keys" / names[0])
    source_cli = in_process_cli(monkeypatch, capsys, source.settings.home, database_url)
    refused = source_cli("backup", str(tmp_path / "again"))
    assert refused.code == 1 and f"the key {keys / 'linked'} is a symbolic link" in refused.err
    assert not (tmp_path / "again").exists()
