"""A client waiting on its run through a server reads the run's progress as a local run
prints it (issue 72, item 5): it never saw that its run was waiting for the blob store. The
server keeps a running run's latest line where every process of the home reads it
(``api.progress``); GET /api/v1/runs/{id} gives it while the run runs, never after."""

from __future__ import annotations

from pathlib import Path

import httpx

from pinbench.remote import Remote
from tests.test_drain import SHORT, _submit, serving, sqlite_home

__all__ = ["sqlite_home"]


def test_a_client_waiting_on_a_run_reads_its_progress_and_nothing_after_it_ends(
    sqlite_home: tuple[Path, str, dict[str, str]],
) -> None:
    home, url, tokens = sqlite_home
    auth = {"Authorization": f"Bearer {tokens['owner']}"}
    with (
        serving(home, url, drain_s=0) as (base, _),
        httpx.Client(base_url=base, headers=auth, timeout=30) as c,
    ):
        digest = c.post("/api/v1/lockfiles", json=SHORT).json()["points"][0]["digest"]
        run_id = _submit(c, digest).json()["id"]
        said: list[str] = []
        remote = Remote(base, tokens["owner"])
        try:
            info = remote.wait(run_id, said.append, poll_s=0.2)
        finally:
            remote.close()
        ended = c.get(f"/api/v1/runs/{run_id}").json()
    assert info["status"] == "succeeded", info
    # the lines a local run prints, between the statuses the client saw
    assert f"run {run_id[:8]} running" in said
    assert "verifying every pinned byte" in said, said
    assert any(line.startswith("running Server (performance)") for line in said), said
    assert said[-1] == f"run {run_id[:8]} succeeded"
    assert ended["progress"] is None
    assert not (home / "cache" / "progress" / run_id).exists()  # forgotten when it ended
