"""`pinbench verify` hashes the pinned blobs while it checks the lockfile
(``pinbench.artifacts.ahead``): the verdict is the same as without it, a blob that fails is
checked again and named the usual way, a child that reports nothing or the wrong digest
changes no verdict, and when the verification ends early the hashing child is killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pinbench.artifacts import ahead as ahead_module
from pinbench.artifacts.ahead import hashes_ahead, pins_of
from pinbench.artifacts.digest import Digest, Progress
from pinbench.artifacts.store import BlobStore
from pinbench.workspace import Workspace
from tests.helpers import Cli, forget_verified, in_process_cli, lock_digits, sha


def _lock(ws: Workspace, tmp_path: Path) -> Path:
    return lock_digits(ws, tmp_path / "digits.lock")


def test_pins_are_read_from_the_lockfile_json(digits: Workspace, tmp_path: Path) -> None:
    raw = _lock(digits, tmp_path).read_bytes()
    pins = pins_of(raw)
    body = json.loads(raw)
    expected = [
        (f"{a['kind']}/{a['name']}@{a['version']}:{f['path']}", f["sha256"], f["size"])
        for a in body["artifacts"]
        for f in a["files"]
    ]
    assert pins == expected and len(pins) >= 3


@pytest.mark.parametrize(
    "raw",
    [b"", b"not json", b"[]", b'{"artifacts": 3}', b'{"artifacts": [{"kind": "model"}]}'],
)
def test_a_lockfile_that_is_not_as_expected_gives_no_pins(raw: bytes) -> None:
    assert pins_of(raw) == []  # the real parse that follows names the problem


@pytest.fixture
def cold(
    digits: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[Path, Cli]:
    """A digits lockfile, a home whose verified-state cache vouches for nothing, the CLI."""
    lock_path = _lock(digits, tmp_path)
    forget_verified(digits.store)
    return lock_path, in_process_cli(
        monkeypatch, capsys, digits.settings.home, digits.settings.database_url
    )


def test_verify_with_hashing_ahead_passes_and_names_a_tampered_blob(
    digits: Workspace, cold: tuple[Path, Cli]
) -> None:
    lock_path, cli = cold
    ok = cli("verify", "--json", str(lock_path))
    assert ok.code == 0, ok.err
    assert json.loads(ok.out)["ok"] is True
    label, digest, _ = pins_of(lock_path.read_bytes())[0]
    blob = digits.store.path(Digest(digest))
    tampered = bytearray(blob.read_bytes())
    tampered[0] ^= 0xFF
    blob.chmod(0o644)
    blob.write_bytes(tampered)
    failed = cli("verify", str(lock_path))
    assert failed.code == 1
    assert label in failed.err
    assert f"expected sha256 {digest}, got {sha(bytes(tampered))}" in failed.err


def test_a_child_that_reports_nothing_leaves_every_blob_to_the_usual_check(
    cold: tuple[Path, Cli], monkeypatch: pytest.MonkeyPatch
) -> None:
    lock_path, cli = cold
    monkeypatch.setattr(ahead_module, "CHILD", "import sys; sys.exit(3)")
    ok = cli("verify", "--json", str(lock_path))
    assert ok.code == 0, ok.err
    assert json.loads(ok.out)["checked"] == len(pins_of(lock_path.read_bytes()))


def test_a_wrong_report_is_not_believed(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "home")
    store.create()
    digest = store.put_bytes(b"model bytes")
    store = forget_verified(store)
    liar = "import sys; print('= ' + '0' * 64 + ' 11 11')"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ahead_module, "CHILD", liar)
        with hashes_ahead(store, [("m", digest.hex, 11)]) as ahead:
            assert ahead.intact(digest.hex, 11) is False


def test_leaving_early_kills_the_child_and_ends_the_reader(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "home")
    store.create()
    data = os.urandom(72 * 1024 * 1024)  # more than one progress report
    digest = store.put_bytes(data)
    store = forget_verified(store)
    started, leaving = threading.Event(), threading.Event()

    def progress(label: str, total: int) -> Progress:
        def shown(n: int) -> None:  # holds the reader at its first report until the end
            if threading.current_thread().name != "pinbench-hash-ahead":
                return  # the bar drawn at the start, by the caller's thread (it waited 30 s)
            started.set()
            leaving.wait(30)

        return shown

    with hashes_ahead(store, [("data", digest.hex, len(data))], progress=progress) as ahead:
        assert started.wait(30)
        leaving.set()  # e.g. the lockfile was refused by the registry: nothing is asked
    assert ahead._child is not None and ahead._child.returncode is not None
    assert not [t for t in threading.enumerate() if t.name == "pinbench-hash-ahead"]


def test_verify_through_the_console_script(digits: Workspace, tmp_path: Path) -> None:
    """The installed script, cache empty: hashed ahead, verified, and a tampered blob named."""
    lock_path = _lock(digits, tmp_path)
    forget_verified(digits.store)
    script = Path(sys.executable).parent / "pinbench"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env["PINBENCH_HOME"] = str(digits.settings.home)
    env["PINBENCH_DATABASE_URL"] = digits.settings.database_url
    ok = subprocess.run([str(script), "verify", str(lock_path)], env=env, capture_output=True)
    assert ok.returncode == 0, ok.stderr
    assert b"all match" in ok.stdout
    label, digest, _ = pins_of(lock_path.read_bytes())[-1]
    blob = digits.store.path(Digest(digest))
    blob.chmod(0o644)
    blob.write_bytes(blob.read_bytes() + b"!")
    bad = subprocess.run([str(script), "verify", str(lock_path)], env=env, capture_output=True)
    assert bad.returncode == 1
    assert label.encode() in bad.stderr
