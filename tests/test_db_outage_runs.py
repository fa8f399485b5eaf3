"""A PostgreSQL outage while runs finish loses nothing (issue 48 item 1, decision 190): a real
PostgreSQL stopped and started by the test under a real ``pinbench serve`` with one run
worker, one run measuring and one queued behind it, a client waiting on the first.

Before decision 190 the first run finished measuring, failed to record ("cannot connect to the
database") and stayed ``running``; its latency blobs were left unreferenced, and a ``gc
--blobs`` removed them; the queued run stayed ``queued`` (its worker's start failed); the
waiting client polled a run that never ended; a restart marked both interrupted with "the
server stopped before this run finished". Now the record waits in the home (its blobs held
from gc, deterministically shown in tests/test_record_waits.py) and is written once the
database is back; the queued run waits its turn and runs; the client says the database is
unavailable and keeps waiting, and reads the outcome.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from pinbench.artifacts.digest import Digest
from pinbench.config import Settings
from pinbench.db.models import Run
from pinbench.db.upkeep import check, collect
from pinbench.remote import Remote
from pinbench.retrying import Retrying
from pinbench.workspace import Workspace
from tests.apiserver import seed_home, serve_process, wait_for_status
from tests.pg import postgres_instance

# LoadGen's Server scenario at 20 queries/s for 2 s (measuring when the database stops), and
# for half a second (the run queued behind it)
SHORT = {
    "model": "vision/digits-logreg@1.1.0",
    "dataset": "sklearn-digits-test@^1",
    "scenario": {"name": "Server", "target_qps": 20, "min_duration_ms": 2_000},
}
QUICK = {**SHORT, "scenario": {"name": "Server", "target_qps": 20, "min_duration_ms": 500}}
DOWN_S = 3.0
"""How long the database stays down after the run's record first failed."""
FINISHED = ("succeeded", "failed", "interrupted", "cancelled")


def _waiting_record(home: Path, run_id: str, timeout_s: float) -> tuple[Path, dict[str, Any]]:
    """The record run ``run_id`` keeps in the home once the database refused it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in (home / "pending").glob(f"*-{run_id}.json"):
            return path, json.loads(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} kept no record: {(home / 'serve.log').read_text()}")


def _lock(c: httpx.Client, request: dict[str, Any]) -> str:
    digest: str = c.post("/api/v1/lockfiles", json=request).json()["points"][0]["digest"]
    return digest


def _wait_in_log(log: Path, needle: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while needle not in log.read_text():
        assert time.monotonic() < deadline, f"{needle!r} not in {log.read_text()}"
        time.sleep(0.05)


def _wait_attested(ws: Workspace, run_id: str) -> None:
    from pinbench.provenance.attest import recorded_attestation

    deadline = time.monotonic() + 30
    while recorded_attestation(ws, run_id) is None:
        assert time.monotonic() < deadline, f"run {run_id[:8]} was never attested"
        time.sleep(0.05)


def test_a_database_outage_while_a_run_finishes_loses_no_result(
    tmp_path: Path, catalog_dir: Path
) -> None:
    home = tmp_path / "home"
    with postgres_instance() as pg:
        tokens, _ = seed_home(home, pg.url, catalog_dir)
        auth = {"Authorization": f"Bearer {tokens['owner']}"}
        serving = serve_process(home, pg.url, "--run-workers", "1")
        with serving as (url, _proc), httpx.Client(base_url=url, headers=auth, timeout=30) as c:
            first, queued = (
                c.post(
                    "/api/v1/runs", json={"lockfile": _lock(c, request), "runner": "local"}
                ).json()["id"]
                for request in (SHORT, QUICK)
            )
            wait_for_status(c, first, ("running",))
            _wait_in_log(home / "serve.log", f"run {first[:8]}: running Server", 60)

            notices: list[str] = []
            waited: dict[str, Any] = {}
            remote = Remote(
                url, tokens["owner"], retrying=Retrying(total_s=90), notice=notices.append
            )
            waiter = threading.Thread(
                target=lambda: waited.update(remote.wait(first, lambda _: None, poll_s=0.2)),
                daemon=True,
            )
            waiter.start()

            pg.stop()  # while the first run measures
            path, record = _waiting_record(home, first, 60)
            down_since = time.monotonic()
            named = (record["columns"]["latencies_sha256"], record["columns"]["trace_sha256"])
            blobs = [d for d in named if d]
            time.sleep(max(0.0, DOWN_S - (time.monotonic() - down_since)))
            pg.start()

            ws = Workspace(Settings(home=home, database_url=pg.url))
            try:
                was_waiting = path.exists()
                swept = collect(ws, grace_s=2, delete=True)  # its blobs are older than that
                assert [g.digest for g in swept.garbage] == [], (was_waiting, swept)
                done = wait_for_status(c, first, FINISHED, 60)
                after = wait_for_status(c, queued, FINISHED, 120)
                waiter.join(timeout=60)
                for run in (first, queued):  # each is signed once it has finished (its blob
                    _wait_attested(ws, run)  # stored first): fsck before then sees that blob
                assert all(ws.store.verify(Digest(d), label=d).is_file() for d in blobs)
                with ws.transaction() as session:
                    row = session.get(Run, first)
                    assert row is not None and row.latencies_sha256 == blobs[0]
                problems = check(ws).problems
            finally:
                ws.close()
                remote.close()
            log = (home / "serve.log").read_text()
    assert (done["status"], done["error"]) == ("succeeded", None), done
    assert done["metrics"] == {m: v for m, v, _ in record["results"]}
    assert record["columns"]["status"] == "succeeded"
    assert (after["status"], after["error"]) == ("succeeded", None), after
    assert waited["status"] == "succeeded"
    assert any("says its database is unavailable" in n for n in notices), notices
    assert f"run {first[:8]}'s record waits for the database" in log
    assert f"run {first[:8]}'s record: done once the database was back" in log
    assert not list((home / "pending").iterdir())
    assert problems == []
