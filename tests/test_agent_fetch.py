"""An agent fetches the pinned blobs it lacks by digest and keeps only bytes that hash to the
pin: a server that sends other bytes fails the fetch naming the file and both digests, and
nothing of it is cached; a blob the agent already holds is not fetched again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import BlobStore, ChecksumMismatch
from pinbench.cluster.agent_run import fetch_pinned
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.worker.job import pinned_files
from pinbench.workspace import Workspace
from tests.helpers import lock_digits, sha

EVIL = b"not the bytes you pinned" * 100


class _Server(ThreadingHTTPServer):
    served: list[str]
    honest: BlobStore | None


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self.server.served.append(self.path)
        store = self.server.honest
        digest = self.path.rsplit("/", 1)[-1]
        body = store.path(Digest(digest)).read_bytes() if store is not None else EVIL
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def blob_server() -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.served, server.honest = [], None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_other_bytes_are_refused_naming_the_file_and_nothing_is_cached(
    digits: Workspace, tmp_path: Path, blob_server: _Server
) -> None:
    lock = Lockfile.read(lock_digits(digits, tmp_path / "digits.lock"))
    store = BlobStore(tmp_path / "agent")
    store.create()
    with pytest.raises(ChecksumMismatch) as caught:
        fetch_pinned(store, lock, _url(blob_server), "a-token", lambda text: None)
    first = lock.body.artifacts[0]
    assert f"{first.ref}:{first.files[0].path}" in str(caught.value)
    assert first.files[0].sha256 in str(caught.value) and sha(EVIL) in str(caught.value)
    assert list(store.blobs.rglob("*")) == [] and list(store.tmp.iterdir()) == []


def test_honest_bytes_are_kept_and_not_fetched_twice(
    digits: Workspace, tmp_path: Path, blob_server: _Server
) -> None:
    lock = Lockfile.read(lock_digits(digits, tmp_path / "digits.lock"))
    blob_server.honest = digits.store
    store = BlobStore(tmp_path / "agent")
    store.create()
    every = {f.sha256 for art in lock.body.artifacts for f in art.files}
    truth = {f.sha256 for f in pinned_files(lock, Kind.DATASET, truth=True)} - {
        f.sha256 for f in pinned_files(lock, Kind.DATASET)
    }
    assert truth  # the dataset's labels: the server scores, the agent never holds them
    pinned = every - truth
    assert fetch_pinned(store, lock, _url(blob_server), "t", lambda text: None) == len(pinned)
    assert {p.name for p in store.blobs.glob("*/*")} == pinned
    assert fetch_pinned(store, lock, _url(blob_server), "t", lambda text: None) == 0
    assert len(blob_server.served) == len(pinned)


def test_an_agent_started_warm_serves_its_second_venv_run_warm_and_ends_its_evaluators(
    digits: Workspace, tmp_path: Path, blob_server: _Server
) -> None:
    """``pinbench agent start --warm``: the agent's actor (here called directly, as Ray would)
    keeps one evaluator per environment; closing the agent ends it."""
    from pinbench.cluster.ray_agent import Agent
    from pinbench.worker.results import read_results

    blob_server.honest = digits.store
    lock = Lockfile.read(lock_digits(digits, tmp_path / "digits.lock"))
    agent = Agent("lab-w", str(tmp_path / "agent"), warm=True)
    answers = [
        agent.run(lock.canonical, _url(blob_server), "t", "venv", "none", False, ("venv",))
        for _ in range(2)
    ]
    assert all(set(a) == {"ok"} for a in answers), answers  # plain data: {"ok": packed}
    packed = [a["ok"] for a in answers]
    first, second = (p["environment"] for p in packed)
    assert (first["warm"], second["warm"], second["warm_served_before"]) == (False, True, 1)
    assert first["warm_process"] == second["warm_process"]
    for p in packed:
        out = tmp_path / f"out-{p['environment']['warm_served_before']}"
        out.mkdir()
        for name, data in p["files"].items():
            (out / name).write_bytes(data)
        result, _ = read_results(out, lock.digest.hex)
        assert result.status == "succeeded"
    agent.close()
    assert not list((tmp_path / "agent" / "tmp").glob("warm-*"))  # its folders are gone
