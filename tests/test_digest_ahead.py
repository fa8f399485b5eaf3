"""`pinbench digest FILE...` hashes its large files while it starts up
(``HashesAhead.start_files``): the digests printed are the files' own, the child's report is
recorded in the verified-state cache only for a file that did not change meanwhile, a child
that reports nothing leaves the hashing to the command, and only the plain form starts early."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinbench.artifacts import ahead as ahead_module
from pinbench.artifacts.ahead import files_ahead
from pinbench.artifacts.store import BlobStore
from pinbench.artifacts.verified import FileState
from pinbench.entry import early_digests, started_early
from pinbench.workspace import Workspace
from tests.helpers import Cli, sha

BIG = 64 * 1024


@pytest.fixture(autouse=True)
def small_is_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of BIG bytes count as large enough to hash ahead (the real floor is 16 MiB)."""
    monkeypatch.setattr(ahead_module, "FILES_MIN_BYTES", BIG)


def _file(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _vouched(store: BlobStore, path: Path) -> str | None:
    found = store.cache.lookup(path.resolve(), FileState.of(path.stat()))
    return None if found is None else found.hex


def test_digest_started_early_prints_each_file_and_records_the_large_ones(
    ws: Workspace, cli: Cli, tmp_path: Path
) -> None:
    big, small = os.urandom(2 * BIG), b"small"
    files = [_file(tmp_path, "big.bin", big), _file(tmp_path, "small.txt", small)]
    args = [str(f) for f in files]
    with started_early(["digest", *args]):
        done = cli("digest", *args)
        assert early_digests(files) is None  # the command took it
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        f"{sha(big)}  {len(big)}  {files[0]}",
        f"{sha(small)}  {len(small)}  {files[1]}",
    ]
    assert _vouched(ws.store, files[0]) == sha(big)


def test_the_child_hashes_and_records_what_the_cache_does_not_vouch_for(
    ws: Workspace, tmp_path: Path
) -> None:
    data = os.urandom(BIG)
    path = _file(tmp_path, "data.bin", data)
    shown: list[int] = []
    with files_ahead(ws.store, [path, tmp_path / "missing.bin", tmp_path]) as ahead:
        assert ahead.settle(path, shown.append) is True
        assert ahead.settle(path, None) is False  # taken once
        assert ahead.settle(tmp_path / "missing.bin", None) is False  # never queued
    assert sum(shown) == len(data)
    assert _vouched(ws.store, path) == sha(data)
    with files_ahead(ws.store, [path]) as again:
        assert again._child is None  # vouched for now: nothing to hash


def test_a_file_changed_while_hashed_ahead_is_not_recorded(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path, "data.bin", b"a" * BIG)
    changes = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_bytes(b'b' * 9)\n"
    monkeypatch.setattr(ahead_module, "CHILD", changes + ahead_module.CHILD)
    with files_ahead(ws.store, [path]) as ahead:
        assert ahead.settle(path, None) is False
    assert _vouched(ws.store, path) is None


def test_a_child_that_reports_nothing_leaves_the_hashing_to_the_command(
    ws: Workspace, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ahead_module, "CHILD", "import sys; sys.exit(3)")
    data = os.urandom(BIG)
    path = _file(tmp_path, "data.bin", data)
    with started_early(["digest", str(path)]):
        done = cli("digest", str(path))
    assert done.code == 0, done.err
    assert done.out.split()[:2] == [sha(data), str(len(data))]


@pytest.mark.parametrize(
    "argv", [["digest"], ["digest", "--help"], ["digest", "{f}", "--json"], ["show", "{f}"]]
)
def test_any_other_argument_list_hashes_nothing_early(
    ws: Workspace, tmp_path: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINBENCH_HOME", str(ws.settings.home))
    path = _file(tmp_path, "data.bin", b"d" * BIG)
    with started_early([a.format(f=path) for a in argv]):
        assert early_digests([path]) is None


def test_digest_through_the_console_script(ws: Workspace, tmp_path: Path) -> None:
    data = os.urandom(17 * 1024 * 1024)  # over the real floor
    path = _file(tmp_path, "data.bin", data)
    script = Path(sys.executable).parent / "pinbench"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env["PINBENCH_HOME"] = str(ws.settings.home)
    done = subprocess.run([str(script), "digest", str(path)], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split()[:2] == [sha(data), str(len(data))]
    assert _vouched(ws.store, path) == sha(data)


def test_a_digest_the_cache_could_not_record_is_not_reported_settled(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(a read-only home, say) so the command hashes the file itself, with its progress bar."""
    path = _file(tmp_path, "data.bin", os.urandom(BIG))
    monkeypatch.setattr(type(ws.store.cache), "record", lambda *args: None)
    with files_ahead(ws.store, [path]) as ahead:
        assert ahead.settle(path, None) is False
