"""`pinbench verify` hashes the pinned blobs while it starts up (``pinbench.artifacts.ahead``):
the verdict is the same as without it, a blob that fails is checked again and named the usual
way, and when the verification ends early nothing keeps hashing and nothing is recorded."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from pinbench.artifacts.ahead import hashes_ahead, pins_of
from pinbench.artifacts.digest import Digest, Progress
from pinbench.artifacts.store import BlobStore
from pinbench.artifacts.verified import FileState
from pinbench.registry import service
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.helpers import in_process_cli, sha


def _lock(ws: Workspace, tmp_path: Path) -> Path:
    request = parse_request(
        {
            "model": "vision/digits-logreg@^1",
            "framework": "onnxruntime@*",
            "dataset": "sklearn-digits-test@^1",
        }
    )
    lock = service.lock_points(ws, request)[0][0]
    path = tmp_path / "digits.lock"
    lock.write(path)
    return path


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


def test_verify_with_hashing_ahead_passes_and_names_a_tampered_blob(
    digits: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lock_path = _lock(digits, tmp_path)
    digits.store.cache.close()
    (digits.settings.home / "cache" / "verified.sqlite").unlink()  # nothing vouched for
    cli = in_process_cli(monkeypatch, capsys, digits.settings.home, digits.settings.database_url)
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


def test_leaving_early_stops_the_hashing_and_records_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "home")
    store.create()
    data = os.urandom(24 * 1024 * 1024)  # several chunks
    digest = store.put_bytes(data)
    blob = store.path(digest)
    store.cache.close()
    (tmp_path / "home" / "cache" / "verified.sqlite").unlink()
    store = BlobStore(tmp_path / "home")
    started = threading.Event()
    ended: list[bool] = []

    def progress(label: str, total: int) -> Progress:
        def shown(n: int) -> None:  # holds the worker after its first chunk until the end
            started.set()
            deadline = time.monotonic() + 30
            while not ahead.cancelled.is_set() and time.monotonic() < deadline:
                time.sleep(0.005)
            ended.append(ahead.cancelled.is_set())

        return shown

    with hashes_ahead(store, [("data", digest.hex, len(data))], progress=progress) as ahead:
        assert started.wait(30)
        # e.g. the lockfile was refused by the registry: the block ends without asking
    assert ended == [True]
    assert not [t for t in threading.enumerate() if t.name.startswith("pinbench-hash-ahead")]
    assert store.cache.lookup(blob.resolve(), FileState.of(blob.stat())) is None
