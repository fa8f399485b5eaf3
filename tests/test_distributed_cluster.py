"""A distributed training run on a real Ray cluster (tests/cluster.py: two agents, each a
machine of its own): the server places the run on the one agent whose cores can host its
workers, the agent's runner starts the two workers as processes there (gloo over 127.0.0.1),
and the server records the run with its scheme, workers and bytes per step; or, with
``distributed.systems``, spreads its ranks over two agents that meet across their network.
More workers than any agent's cores, or a spread run named on too few systems: refused,
nothing queued."""

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

    def run_on(self, lock: Path, *systems: str) -> tuple[int, str, str]:
        env = dict(self.cluster.env, PINBENCH_URL=self.url, PINBENCH_TOKEN=self.tokens["owner"])
        command = [str(BIN / "pinbench"), "run", str(lock), "--runner", "local"]
        for system in systems:
            command += ["--on", system]
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
        ray_cluster(
            root / "home", url, {"lab-a": root / "cache-a", "lab-b": root / "cache-b"}
        ) as cluster,
        served(
            cluster, PORT, "--cluster", ADDRESS, "--allow-spread", agent_token=tokens["reader"]
        ) as server,
    ):
        yield World(cluster, server, tokens, root)


@pytest.fixture(scope="module")
def one_agent(world: World) -> dict[str, Any]:
    """Two allreduce workers on lab-a: the run as ``runs show`` shows it."""
    lock = world.lock("allreduce", {"scheme": "allreduce", "workers": 2})
    code, out, err = world.run_on(lock, "lab-a")
    assert code == 0, err
    (info,) = json.loads(out)
    assert info["status"] == "succeeded" and info["system"] == "lab-a"
    return world.shown(info["id"])


def test_two_workers_on_an_agent_train_to_the_target(one_agent: dict[str, Any]) -> None:
    shown = one_agent
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
    assert record["systems"] == []  # every rank on the one agent


def test_ranks_spread_over_two_agents_train_as_on_one_agent_and_as_ddp(
    world: World, one_agent: dict[str, Any]
) -> None:
    """Issue 85 item 5 (decision 317): rank 0 on lab-a, rank 1 on lab-b, each agent a
    machine of its own (its network namespace and address), gloo between their addresses.
    The run trains the same shards in the same order as two workers on one agent, so its
    final weights are theirs bit for bit, and DistributedDataParallel's across the same two
    agents are too (two halved gradients summed: exact). The run records both systems and
    the share of its ranks' training time spent in the scheme's collectives."""
    spread = world.lock("spread", {"scheme": "allreduce", "workers": 2, "systems": 2})
    code, out, err = world.run_on(spread, "lab-a", "lab-b")
    assert code == 0, err
    (info,) = json.loads(out)
    assert info["status"] == "succeeded" and info["system"] == "lab-a", info
    shown = world.shown(info["id"])
    record = shown["details"]["distributed"]
    assert record["systems"] == ["lab-a", "lab-b"]
    assert (record["workers"], record["bytes_per_step"]) == (2, 24360)
    assert 0 < record["collective_share"] < 1
    assert len(record["collective_s_per_worker"]) == 2
    assert shown["metrics"]["collective_share"] == record["collective_share"]
    environment = shown["details"]["environment"]
    assert (environment["sandbox"], environment["sandbox_network"]) == ("bwrap", "shared")
    weights = shown["details"]["training"]["weights_sha256"]
    assert weights == one_agent["details"]["training"]["weights_sha256"]
    assert _curves(shown) == _curves(one_agent)

    ddp = world.lock("spread-ddp", {"scheme": "ddp", "workers": 2, "systems": 2})
    code, out, err = world.run_on(ddp, "lab-b", "lab-a")  # rank 0 on lab-b this time
    assert code == 0, err
    (info,) = json.loads(out)
    assert info["system"] == "lab-b", info
    native = world.shown(info["id"])
    assert native["details"]["distributed"]["systems"] == ["lab-b", "lab-a"]
    assert native["details"]["distributed"]["collective_share"] is None  # overlapped: unknown
    assert native["details"]["training"]["weights_sha256"] == weights


def _curves(shown: dict[str, Any]) -> list[tuple[float, float, float]]:
    """Each epoch's training loss, validation loss and top-1 (its times are the machine's)."""
    epochs = shown["details"]["training"]["epochs"]
    return [(e["train_loss"], e["val_loss"], e["val_top1"]) for e in epochs]


def test_a_spread_run_on_other_than_its_count_of_systems_is_refused_and_nothing_queued(
    world: World,
) -> None:
    lock = world.lock("spread-one", {"scheme": "allreduce", "workers": 2, "systems": 2})
    before = world.runs()
    code, _, err = world.run_on(lock, "lab-a")
    assert code == 1, err
    assert "distributed.systems = 2: name exactly 2 systems with --on" in err
    assert world.runs() == before


def test_a_system_whose_share_of_the_ranks_fails_fails_the_run_naming_it(world: World) -> None:
    """Rank 1's agent finds its copy of the model's weights changed (its cache tampered
    with): its evaluation fails before its ranks start, the run fails naming that system, and
    rank 0's evaluation, waiting for its peer, is cancelled (the run ends well before the
    ranks' rendezvous would time out)."""
    import time

    lock = world.lock("spread-tampered", {"scheme": "allreduce", "workers": 2, "systems": 2})
    pinned = Lockfile.from_bytes(lock.read_bytes(), source="the test's lockfile")
    (weights,) = [f for f in pinned_files(pinned, "model") if f.path.endswith(".safetensors")]
    blob = world.root / "cache-b" / "blobs" / weights.sha256[:2] / weights.sha256
    assert blob.is_file()  # fetched by the spread runs before
    blob.chmod(0o644)
    original = blob.read_bytes()
    blob.write_bytes(bytes(len(original)))
    started = time.monotonic()
    try:
        code, out, err = world.run_on(lock, "lab-a", "lab-b")
    finally:
        blob.unlink()  # fetched again by the next run that needs it
    assert code != 0, out
    assert "ranks on system lab-b:" in err, err
    assert time.monotonic() - started < 100


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
    code, out, err = world.run_on(lock, "lab-a")
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
