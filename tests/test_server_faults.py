"""A server that dies or is stopped mid-run, through real ``pinbench serve`` processes.

``kill -9``: the dead server's run must not stay ``running`` for ever. A live server sweeps
expired leases while it serves (not only when it starts), so the run is marked
``interrupted`` once the dead server's lease has run out. ``SIGTERM``: the server marks its
run interrupted and removes the run's scratch on its way out (not at the next start).

The lease is ``PINBENCH_SERVER_LEASE_S`` (here a few seconds; 30 by default)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pinbench.api.outage import STOPPED
from pinbench.artifacts.scratch import KINDS
from pinbench.evaluator.instances import LEASE_ENV
from tests.apiserver import seed_home, serve_process, wait_for_status
from tests.helpers import in_process_cli
from tests.pg import free_port

LEASE_S = 3
# A long run that costs little: LoadGen's Server scenario at 20 queries/s for up to 10 min.
LONG = {
    "model": "vision/digits-logreg@1.1.0",
    "dataset": "sklearn-digits-test@^1",
    "scenario": {"name": "Server", "target_qps": 20, "min_duration_ms": 600_000},
}


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]


@dataclass
class Home:
    home: Path
    database_url: str
    tokens: dict[str, str]

    def scratch(self) -> list[str]:
        """The scratch entries in HOME/tmp (a warm pool's folder is not a run's)."""
        tmp = self.home / "tmp"
        kinds = tuple(f"{k}-" for k in KINDS if k != "warm")
        return sorted(p.name for p in tmp.iterdir() if p.name.startswith(kinds))


@pytest.fixture
def home(tmp_path: Path, catalog_dir: Path) -> Home:
    database_url = f"sqlite:///{tmp_path}/db.sqlite"
    tokens, _ = seed_home(tmp_path / "home", database_url, catalog_dir)
    return Home(tmp_path / "home", database_url, tokens)


@contextmanager
def serving(home: Home) -> Iterator[Served]:
    """``pinbench serve`` with a short lease, in a session of its own (stopped on the way out
    if the test has not ended it)."""
    lease = {LEASE_ENV: str(LEASE_S)}
    with serve_process(home.home, home.database_url, env=lease) as (url, process):
        yield Served(url, process)


def _submit(url: str, token: str, runner: str) -> str:
    """Submit the long run; its id once it runs."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as c:
        digest = c.post("/api/v1/lockfiles", json=LONG).json()["points"][0]["digest"]
        queued = c.post("/api/v1/runs", json={"lockfile": digest, "runner": runner})
        assert queued.status_code == 202, queued.text
        run_id: str = queued.json()["id"]
        wait_for_status(c, run_id, ("running",))
        return run_id


def _until(ready: Callable[[], bool], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, f"not within {timeout_s} s"
        time.sleep(0.1)


def test_a_run_of_a_server_killed_mid_run_is_interrupted_by_a_live_server(home: Home) -> None:
    """The second server starts while the first is alive, so its start-up sweep leaves the
    first one's run alone: only a sweep while serving can mark it (and reclaim the dead
    server's scratch)."""
    with serving(home) as first, serving(home) as live:
        run_id = _submit(first.url, home.tokens["owner"], "local")
        _until(lambda: any(name.startswith("run-") for name in home.scratch()))
        os.killpg(first.process.pid, signal.SIGKILL)  # no shutdown, no lease renewal
        first.process.wait()
        with httpx.Client(base_url=live.url) as c:
            info = wait_for_status(c, run_id, ("interrupted", "failed", "succeeded"), 120)
        assert (info["status"], info["error"]) == ("interrupted", STOPPED)
        _until(lambda: home.scratch() == [])  # the live server's next sweep


def test_a_server_stopped_mid_run_records_it_interrupted_and_leaves_no_scratch(
    home: Home,
) -> None:
    with serving(home) as server:
        run_id = _submit(server.url, home.tokens["owner"], "local")
        _until(lambda: any(name.startswith("run-") for name in home.scratch()))  # its own
        os.killpg(server.process.pid, signal.SIGTERM)
        server.process.wait(60)
    assert home.scratch() == []
    with serving(home) as again, httpx.Client(base_url=again.url) as c:
        info = c.get(f"/api/v1/runs/{run_id}").json()
    assert (info["status"], info["error"]) == ("interrupted", STOPPED)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("soon", "not a number of seconds"),
        ("0", "must be 1 to 3600 seconds"),  # every server would look dead at once
        ("-5", "must be 1 to 3600 seconds"),
        ("nan", "must be 1 to 3600 seconds"),
        ("1e9", "must be 1 to 3600 seconds"),  # a dead server's runs kept for decades
    ],
)
def test_a_bad_lease_is_refused_before_serving(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
    reason: str,
) -> None:
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "home")
    monkeypatch.setenv(LEASE_ENV, value)
    ran = cli("serve", "--port", str(free_port()))
    assert ran.code == 1
    assert f"invalid {LEASE_ENV} {value!r}: {reason}" in ran.err
    assert "Traceback" not in ran.err
    assert not (tmp_path / "home").exists()  # refused before anything was made
