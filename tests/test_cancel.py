"""Cancelling runs through a real `pinbench serve` and through the CLI; two servers on one
home, where the second leaves the first one's live runs (and scratch) alone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pinbench.artifacts.scratch import owners_of
from tests.apiserver import Server, api_server, serve, wait_for_status
from tests.helpers import Cli, in_process_cli

# A long run that costs little: LoadGen's Server scenario at 20 queries/s for up to 10 min.
LONG = {
    "model": "vision/digits-logreg@1.1.0",
    "dataset": "sklearn-digits-test@^1",
    "scenario": {"name": "Server", "target_qps": 20, "min_duration_ms": 600_000},
}
FINISHED = ("succeeded", "failed", "interrupted", "cancelled")


def _submit(c: httpx.Client) -> str:
    digest = c.post("/api/v1/lockfiles", json=LONG).json()["points"][0]["digest"]
    queued = c.post("/api/v1/runs", json={"lockfile": digest, "runner": "local"})
    assert queued.status_code == 202, queued.text
    run_id: str = queued.json()["id"]
    return run_id


@pytest.fixture
def server(tmp_path: Path, catalog_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A server with one run worker. Its lease is long, so that it sweeps the scratch of
    dead processes when it starts and not again during a test: what a second server
    reclaims at its start is then its own to report (a sweep every 10 s of the 30 s default
    lease could take the dead stage file first, depending on the test's timing)."""
    monkeypatch.setenv("PINBENCH_SERVER_LEASE_S", "3600")
    with api_server(
        tmp_path / "home",
        f"sqlite:///{tmp_path}/db.sqlite",
        "--run-workers",
        "1",
        catalog_dir=catalog_dir,
    ) as srv:
        yield srv


def _cli(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    server: Server,
    url: str | None = None,
    who: str = "owner",
) -> Cli:
    cli = in_process_cli(monkeypatch, capsys, server.home, server.database_url)
    if url is not None:
        monkeypatch.setenv("PINBENCH_URL", url)
        monkeypatch.setenv("PINBENCH_TOKEN", server.tokens[who])
    return cli


def test_cancel_through_the_api_queued_and_running_by_owner_only(server: Server) -> None:
    with server.client("owner") as owner:
        running = _submit(owner)
        wait_for_status(owner, running, ("running",))
        queued = _submit(owner)
        assert owner.get(f"/api/v1/runs/{queued}").json()["status"] == "queued"
        with server.client("other") as other, server.client("reader") as reader:
            refused = other.delete(f"/api/v1/runs/{queued}")
            assert refused.status_code == 403
            assert "only its submitter or an admin may cancel it" in refused.json()["detail"]
            assert reader.delete(f"/api/v1/runs/{queued}").status_code == 403
        assert httpx.delete(f"{server.url}/api/v1/runs/{queued}").status_code == 401
        assert owner.get(f"/api/v1/runs/{queued}").json()["status"] == "queued"  # unchanged

        cancelled = owner.delete(f"/api/v1/runs/{queued}")
        assert cancelled.status_code == 202
        assert cancelled.json()["status"] == "cancelled"
        assert cancelled.json()["error"] == "cancelled by owner"

        with server.client("admin") as admin:
            assert admin.delete(f"/api/v1/runs/{running}").status_code == 202
        info = wait_for_status(owner, running, FINISHED)
        assert info["status"] == "cancelled" and info["error"] == "cancelled by admin"
        assert not info["metrics"]

        again = owner.delete(f"/api/v1/runs/{running}")
        assert again.status_code == 409
        assert "already finished (cancelled)" in again.json()["detail"]
        assert owner.delete("/api/v1/runs/0000").status_code == 404
        # the queued run never started, and the worker is free for the next run
        assert owner.get(f"/api/v1/runs/{queued}").json()["status"] == "cancelled"
        wait_for_status(owner, _submit(owner), ("running",))


def test_a_second_server_leaves_the_first_ones_runs_and_scratch_alone(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = server.home / "tmp"
    with server.client("owner") as owner:
        running = _submit(owner)
        wait_for_status(owner, running, ("running",))
        deadline = time.monotonic() + 60
        # its sandboxed worker's folder and the folder of the worker's logs
        while len(live_scratch := {p.name for p in tmp.glob("run-*")}) < 2:
            assert time.monotonic() < deadline, "the running run made no scratch folders"
            time.sleep(0.1)
        assert len(live_scratch) == 2
        # what a publish killed with -9 leaves: a stage file whose owner holds no lock
        (owners_of(tmp) / "0123456789abcdef.lock").write_text("pid 1 on elsewhere\n")
        (tmp / "stage-0123456789abcdef-x1y2z3").write_bytes(b"z" * 1000)

        with serve(server.home, server.database_url) as second:
            assert owner.get(f"/api/v1/runs/{running}").json()["status"] == "running"
            assert {p.name for p in tmp.glob("run-*")} == live_scratch
            assert not (tmp / "stage-0123456789abcdef-x1y2z3").exists()  # reclaimed at start
            log = next(server.home.glob("serve-*.log")).read_text()
            assert "reclaimed 1 scratch entry, 1,000 bytes" in log
            assert "interrupted" not in log

            queued = _submit(owner)
            # through the second server, with the CLI: the first one's queued run
            remote = _cli(monkeypatch, capsys, server, url=second)
            done = remote("runs", "cancel", queued, "--json")
            assert done.code == 0, done.err
            assert '"status": "cancelled"' in done.out
            assert '"error": "cancelled by owner"' in done.out

        # on the server's own database, with the CLI: its running run (its heartbeat stops it)
        local = _cli(monkeypatch, capsys, server)
        stopped = local("runs", "cancel", running[:8])
        assert stopped.code == 0, stopped.err
        assert f"run {running} cancelled: cancelled by the operator" in stopped.out
        finished = local("runs", "cancel", running)
        assert finished.code == 1
        assert "already finished (cancelled): only a queued or running run" in finished.err
