"""``pinbench runs outputs RUN -o FILE``: the outputs an accuracy run recorded, as the ``.npy``
file the run stored (checked against its sha256 while copied), from this home and from a
server; a run that recorded none, an unknown or ambiguous id, a file already there, bytes that
are not what the run recorded or not a plain array: refused, and nothing written."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from pinbench.artifacts.destination import DestinationRefused
from pinbench.artifacts.digest import Digest
from pinbench.evaluator.records.run_outputs import OutputsRefused, export_outputs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import queue_run, run_lockfile
from pinbench.registry import service
from pinbench.registry.request import parse_request
from tests.apiserver import Server
from tests.helpers import DIGITS, Cli, Home, in_process_cli, published_home, run_digits, sha

QUEUED = ("abc00000-0000-4000-8000-000000000001", "abc00000-0000-4000-8000-000000000002")
"""Two queued runs whose ids begin alike (``abc``)."""
QUICK = {"min_duration_ms": 0, "min_query_count": 50, "max_query_count": 50}


@dataclass
class Runs:
    home: Home
    accuracy: str
    performance: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Runs]:
    """A home with the digits catalog, one accuracy run, one performance run, two queued."""
    with published_home(tmp_path_factory.mktemp("outputs"), catalog_dir) as home:
        accuracy = run_digits(home.ws)
        lock = service.lock(home.ws, parse_request({**DIGITS, "scenario": QUICK}))[0]
        performance = run_lockfile(home.ws, lock, say=lambda _: None).id
        for run_id in QUEUED:
            queue_run(home.ws, lock, runner="local", run_id=run_id)
        yield Runs(home, accuracy, performance)


@pytest.fixture
def cli(runs: Runs, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, runs.home.home, runs.home.db)


def test_an_accuracy_runs_outputs_are_the_npy_it_recorded(
    cli: Cli, runs: Runs, tmp_path: Path
) -> None:
    out = tmp_path / "outputs.npy"
    done = cli("runs", "outputs", runs.accuracy[:8], "-o", str(out), "--json")
    assert done.code == 0, done.err
    details = show_run(runs.home.ws, runs.accuracy)["details"]
    data = out.read_bytes()
    assert sha(data) == details["outputs_sha256"]
    scores = np.load(out, allow_pickle=False)
    assert scores.shape == (450, 10)  # the digits test split's class scores
    assert json.loads(done.out) == {
        "run": runs.accuracy,
        "path": str(out),
        "sha256": details["outputs_sha256"],
        "size": len(data),
        "shape": [450, 10],
        "name": details["outputs_name"],
    }
    again = cli("runs", "outputs", runs.accuracy, "-o", str(out))
    assert again.code == 1 and "--force" in again.err  # refused: the file is there
    out.write_bytes(b"the author's own file")
    assert cli("runs", "outputs", runs.accuracy, "-o", str(out), "--force").code == 0
    assert out.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs.npy"]  # no temp left


@pytest.mark.parametrize(
    ("which", "words"),
    [
        ("performance", ["recorded no outputs", "a performance run"]),
        ("queued", ["recorded no outputs", "status is queued"]),
        ("abc", ["'abc' is ambiguous", QUEUED[0], QUEUED[1]]),
        ("ffffffff", ["no run 'ffffffff'"]),
        ("not-a-run!", ["0-9, a-f"]),
    ],
)
def test_refused_naming_why_and_nothing_written(
    cli: Cli, runs: Runs, tmp_path: Path, which: str, words: list[str]
) -> None:
    run = {"performance": runs.performance, "queued": QUEUED[0]}.get(which, which)
    out = tmp_path / "outputs.npy"
    done = cli("runs", "outputs", run, "-o", str(out))
    assert done.code == 1, (done.out, done.err)
    assert "Traceback" not in done.err
    for word in words:
        assert word in done.err
    assert list(tmp_path.iterdir()) == []


def test_a_folder_as_the_file_is_refused(cli: Cli, runs: Runs, tmp_path: Path) -> None:
    done = cli("runs", "outputs", runs.accuracy, "-o", str(tmp_path))
    assert done.code == 1 and "it is a folder" in done.err
    assert list(tmp_path.iterdir()) == []


def test_a_changed_blob_is_refused_while_copied(cli: Cli, runs: Runs, tmp_path: Path) -> None:
    digest = show_run(runs.home.ws, runs.accuracy)["details"]["outputs_sha256"]
    blob = runs.home.ws.store.path(Digest(digest))
    kept = blob.read_bytes()
    blob.chmod(0o644)
    try:
        blob.write_bytes(kept[:-4] + b"\0\0\0\1")
        done = cli("runs", "outputs", runs.accuracy, "-o", str(tmp_path / "o.npy"))
    finally:
        blob.write_bytes(kept)
        blob.chmod(0o444)
    assert done.code == 1
    assert f"checksum mismatch for the outputs of run {runs.accuracy[:8]}" in done.err
    assert digest in done.err
    assert list(tmp_path.iterdir()) == []


def test_an_object_array_is_never_written_even_with_its_sha256(tmp_path: Path) -> None:
    """(a server's blob, say): its bytes are what the run names, but a pickle."""
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    data = buffer.getvalue()
    info = {
        "id": "d" * 8,
        "status": "succeeded",
        "mode": "accuracy",
        "details": {"outputs_sha256": hashlib.sha256(data).hexdigest()},
    }
    with pytest.raises(OutputsRefused, match=r"not a plain \.npy array"):
        export_outputs(info, lambda _: [data], tmp_path / "o.npy")
    assert list(tmp_path.iterdir()) == []


def test_force_replaces_a_file_and_writes_through_a_pipe(tmp_path: Path) -> None:
    """``--force`` replaced a FIFO (so also ``/dev/null``, as root) with a regular file; a
    pipe is written through in place, force or not (decision 289)."""
    buffer = io.BytesIO()
    np.save(buffer, np.arange(3), allow_pickle=False)
    data = buffer.getvalue()
    info = {
        "id": "d" * 8,
        "status": "succeeded",
        "mode": "accuracy",
        "details": {"outputs_sha256": hashlib.sha256(data).hexdigest()},
    }
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()))
    reader.start()
    export_outputs(info, lambda _: [data], pipe, force=True)
    reader.join(timeout=60)
    assert got == [data]
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"] and stat.S_ISFIFO(pipe.lstat().st_mode)
    (tmp_path / "o.npy").write_bytes(b"old")
    with pytest.raises(DestinationRefused, match="give --force"):
        export_outputs(info, lambda _: [data], tmp_path / "o.npy")
    export_outputs(info, lambda _: [data], tmp_path / "o.npy", force=True)
    assert (tmp_path / "o.npy").read_bytes() == data


def test_through_a_server(
    server: Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    ws = server.workspace()
    try:
        run_id = run_digits(ws)
        details = show_run(ws, run_id)["details"]
        digest, summary = details["outputs_sha256"], details["loadgen_logs"]["summary"]
    finally:
        ws.close()
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "no-home")
    monkeypatch.setenv("PINBENCH_URL", server.url)
    monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["reader"])
    out = tmp_path / "outputs.npy"
    done = cli("runs", "outputs", run_id[:8], "-o", str(out))
    assert done.code == 0, done.err
    assert sha(out.read_bytes()) == digest
    assert np.load(out, allow_pickle=False).shape == (450, 10)
    log = tmp_path / "summary.txt"
    done = cli("runs", "outputs", run_id[:8], "--log", "summary", "-o", str(log))
    assert done.code == 0, done.err
    assert sha(log.read_bytes()) == summary and "No errors encountered" in log.read_text()
    assert not (tmp_path / "no-home").exists()  # the server's, not a home here
