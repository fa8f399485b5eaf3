"""``auto`` on a server (and on its cluster agents) picks among the runners the operator allows
(``serve --runners``), the most confined first: docker when the lockfile pins an image and a
Docker Engine answers, then venv, then local. A server allowing only ``local`` used to turn
``auto`` into venv and refuse its own choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinbench import catalog as builtin
from pinbench.evaluator.server_runner import RunnerRefused, choose_server_runner
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.apiserver import api_server, wait_for_status

SHORT = {
    "model": f"{builtin.MODEL_NAME}@1.1.0",
    "dataset": f"{builtin.DATASET_NAME}@1",
    "scenario": {"min_duration_ms": 0, "min_query_count": 16, "max_query_count": 16},
}


@pytest.fixture
def lock(digits: Workspace) -> Lockfile:
    locked, _ = service.lock(digits, parse_request(SHORT))
    assert locked.body.environment is None or locked.body.environment.image is None
    return locked


@pytest.mark.parametrize(
    ("allowed", "runner", "chosen"),
    [
        (("local", "venv", "docker"), "auto", "venv"),  # no image pinned: docker cannot run it
        (("local",), "auto", "local"),  # the only one allowed (was: venv, then refused)
        (("venv",), "auto", "venv"),
        (("docker",), "auto", "docker"),  # nothing else allowed: its own error says why
        (("docker", "local"), "auto", "local"),  # docker cannot run it; venv is not allowed
        (("local", "venv"), "auto", "venv"),  # the most confined first, whatever the order
        (("local", "docker"), "local", "local"),  # a runner named and allowed is taken
    ],
)
def test_auto_picks_among_the_servers_runners(
    lock: Lockfile, allowed: tuple[str, ...], runner: str, chosen: str
) -> None:
    assert choose_server_runner(runner, lock, allowed) == chosen


@pytest.mark.parametrize(
    ("allowed", "runner"),
    [(("local",), "venv"), (("docker",), "local"), ((), "auto")],
)
def test_a_runner_the_server_does_not_allow_is_refused(
    lock: Lockfile, allowed: tuple[str, ...], runner: str
) -> None:
    with pytest.raises(RunnerRefused, match=f"does not run evaluations in the '{runner}'"):
        choose_server_runner(runner, lock, allowed)


def test_a_server_allowing_only_local_runs_auto_in_local(tmp_path: Path, catalog_dir: Path) -> None:
    with (
        api_server(
            tmp_path / "home",
            f"sqlite:///{tmp_path}/db",
            "--runners",
            "local",
            catalog_dir=catalog_dir,
        ) as srv,
        srv.client("owner") as c,
    ):
        digest = c.post("/api/v1/lockfiles", json=SHORT).json()["points"][0]["digest"]
        queued = c.post("/api/v1/runs", json={"lockfile": digest, "runner": "auto"})
        assert queued.status_code == 202, queued.text
        info = wait_for_status(c, queued.json()["id"], ("succeeded", "failed", "interrupted"))
    assert (info["status"], info["runner"], info["error"]) == ("succeeded", "local", None)
