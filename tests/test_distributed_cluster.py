"""A distributed training run on a real Ray cluster (tests/cluster.py: a loopback-only network
namespace): the server places the run on the one agent whose cores can host its workers, the
agent's runner starts the two workers as processes there (gloo over 127.0.0.1), and the server
records the run with its scheme, workers and bytes per step. More workers than any agent's
cores: refused, nothing queued."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import func, select

from pinbench.config import Settings
from pinbench.db.models import Run
from pinbench.evaluator.records.run_view import show_run
from pinbench.registry.lockfile import Lockfile
from pinbench.specs.distributed import available_here
from pinbench.worker.job import pinned_files, truth_paths
from pinbench.workspace import Workspace
from tests.apiserver import seed_home
from tests.cluster import ADDRESS, BIN, ONE_CLUSTER, Cluster, ray_cluster, served

pytestmark = [
    pytest.mark.usefixtures("two_cores"),  # with CI=true a failure, never a skip
    ONE_CLUSTER,  # one Ray cluster at a time (tests/cluster.py)
]

PORT = 8460
REQUEST: dict[str, Any] = {
    "model": "vision/digits-cnn-torch@^1",
    "dataset": "sklearn-digits-train@^1",
    "framework": "torch@*",
    "training": {
        "validation": "sklearn-digits-test@^1",
        "learning_rate": 0.01,
        "batch_size": 32,
        "epochs": 10,
        "target_top1": 0.9,
    },
}


@dataclass
class World:
    cluster: Cluster
    url: str
    tokens: dict[str, str]
    root: Path

    def workspace(self) -> Workspace:
        env = self.cluster.env
        return Workspace(
            Settings(home=Path(env["PINBENCH_HOME"]), database_url=env["PINBENCH_DATABASE_URL"])
        )

    def lock(self, name: str, distributed: dict[str, Any]) -> Path:
        request = self.root / f"{name}.yaml"
        request.write_text(yaml.safe_dump({**REQUEST, "distributed": distributed}))
        path = self.root / f"{name}.lock"
        done = self.cluster.pinbench("lock", str(request), "-o", str(path))
        assert done.returncode == 0, done.stderr
        return path

    def run_on(self, lock: Path, system: str) -> tuple[int, str, str]:
        env = dict(self.cluster.env, PINBENCH_URL=self.url, PINBENCH_TOKEN=self.tokens["owner"])
        command = [str(BIN / "pinbench"), "run", str(lock), "--on", system, "--runner", "local"]
        done = self.cluster.ns.run([*command, "--json"], env, timeout=400)
        return done.returncode, done.stdout, done.stderr

    def shown(self, run_id: str) -> dict[str, Any]:
        """The run as ``runs show --json`` shows it."""
        ws = self.workspace()
        try:
            return show_run(ws, run_id, nested=True)
        finally:
            ws.close()

    def runs(self) -> int:
        ws = self.workspace()
        try:
            with ws.transaction() as session:
                return session.scalar(select(func.count()).select_from(Run)) or 0
        finally:
            ws.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("distributed-cluster")
    url = f"sqlite:///{root / 'pinbench.db'}"
    tokens, _ = seed_home(root / "home", url, cnn_catalog_dir)
    with (
        ray_cluster(root / "home", url, {"lab-a": root / "cache-a"}) as cluster,
        served(cluster, PORT, "--cluster", ADDRESS, agent_token=tokens["reader"]) as server,
    ):
        yield World(cluster, server, tokens, root)


def test_two_workers_on_an_agent_train_to_the_target(world: World) -> None:
    lock = world.lock("allreduce", {"scheme": "allreduce", "workers": 2})
    code, out, err = world.run_on(lock, "lab-a")
    assert code == 0, err
    (info,) = json.loads(out)
    assert info["status"] == "succeeded" and info["system"] == "lab-a"
    shown = world.shown(info["id"])
    record = shown["details"]["distributed"]
    assert (record["scheme"], record["workers"], record["bytes_per_step"]) == (
        "allreduce",
        2,
        24360,
    )
    training = shown["details"]["training"]
    assert training["reached_epoch"] is not None
    assert len(training["weights_sha256"]) == 64  # the agent's weights, stored by the server
    assert shown["metrics"]["time_to_accuracy_s"] > 0


def test_more_workers_than_any_agent_has_cores_is_refused_and_nothing_queued(
    world: World,
) -> None:
    lock = world.lock("too-many", {"scheme": "ddp", "workers": available_here() + 1})
    before = world.runs()
    code, _, err = world.run_on(lock, "all")
    assert code == 1, err
    assert f"lab-a: has {available_here()} cores, fewer than distributed.workers" in err
    assert world.runs() == before


def test_a_keras_models_audited_performance_test_runs_on_an_agent_without_the_truth(
    world: World,
) -> None:
    """Issue 85 item 1: Keras layers run operations of their own, so the host keeps the clock
    and audits the run (TEST04, TEST01); on an agent, the agent is that host, and is never
    handed the dataset's labels. TEST01's accuracy pass is compared there by its seals and
    finished on the server, where the truth is: the run succeeds on the agent, TEST04 measured
    and TEST01 passed, and the labels' blob never reached the agent's cache."""
    request = world.root / "keras.yaml"
    scenario = {"min_duration_ms": 0, "min_query_count": 64, "max_query_count": 64}
    request.write_text(
        yaml.safe_dump(
            {
                "model": "vision/digits-cnn-keras@^1",
                "framework": "tensorflow@*",
                "dataset": "sklearn-digits-test@^1",
                "scenario": scenario,
            }
        )
    )
    lock = world.root / "keras.lock"
    done = world.cluster.pinbench("lock", str(request), "-o", str(lock))
    assert done.returncode == 0, done.stderr
    pinned = Lockfile.from_bytes(lock.read_bytes(), source="the test's lockfile")
    withheld = truth_paths(pinned)
    truth = [
        world.root / "cache-a" / "blobs" / f.sha256[:2] / f.sha256
        for f in pinned_files(pinned, "dataset", truth=True)
        if f.path in withheld
    ]
    assert truth
    for blob in truth:  # a training run here fetched them (it is not scored apart)
        blob.unlink(missing_ok=True)
    code, out, err = world.run_on(lock, "all")
    assert code == 0, err
    (info,) = json.loads(out)
    assert info["status"] == "succeeded" and info["system"] == "lab-a", info
    assert not any(blob.exists() for blob in truth), "the agent was handed the labels"
    shown = world.shown(info["id"])
    audits = shown["details"]["audits"]
    assert "unique" in audits["TEST04"], audits  # measured (passing is this machine's timing)
    assert audits["TEST01"]["passed"] is True and audits["TEST01"]["compared"] > 0, audits
    assert shown["details"]["clock"]
    assert shown["metrics"]["audit_test01_passed_bool"] == 1.0
    assert shown["metrics"]["loadgen_valid_bool"] == 1.0
