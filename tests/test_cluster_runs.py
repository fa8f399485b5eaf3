"""Runs on agents, through the server (a real three-node Ray cluster: tests/cluster.py):
`pinbench run LOCK --on all` queues one run per system; each agent fetches the pinned blobs by
digest from the server's blob API into its own empty cache, checks every byte, runs, and the
server validates and records the result, naming the system and the agent's host. Placement
that no system meets is refused with every system's shortfall, and nothing is queued."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from sqlalchemy import func, select

from pinbench.catalog import magika
from pinbench.config import Settings
from pinbench.db.models import Run
from pinbench.evaluator.records.run_view import show_run
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.sdk.registry import Registry
from pinbench.workspace import Workspace
from tests.apiserver import seed_home
from tests.cluster import (
    ADDRESS,
    BIN,
    ONE_CLUSTER,
    Cluster,
    ray_cluster,
    served,
    served_process,
)

pytestmark = ONE_CLUSTER  # one Ray cluster at a time (tests/cluster.py)

PORT = 8400
REQUEST = {
    "model": "vision/digits-logreg@^1",
    "framework": "onnxruntime@*",
    "dataset": "sklearn-digits-test@^1",
    "scenario": {"min_duration_ms": 0, "min_query_count": 32, "max_query_count": 32},
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

    def lock(self, name: str, **extra: object) -> Path:
        request = dump_yaml(self.root / f"{name}.yaml", {**REQUEST, **extra})
        path = self.root / f"{name}.lock"
        done = self.cluster.pinbench("lock", str(request), "-o", str(path))
        assert done.returncode == 0, done.stderr
        return path

    def run_on(
        self,
        lock: Path,
        *on: str,
        runner: str = "local",
        url: str | None = None,
        retries: int | None = None,
    ) -> tuple[int, str, str]:
        """``pinbench run LOCK --on SYSTEM...`` through the server at ``url`` (the world's)."""
        env = dict(
            self.cluster.env, PINBENCH_URL=url or self.url, PINBENCH_TOKEN=self.tokens["owner"]
        )
        args = [a for system in on for a in ("--on", system)]
        if retries is not None:
            args += ["--retries", str(retries)]
        done = self.cluster.ns.run(
            [
                str(BIN / "pinbench"),
                "run",
                str(lock),
                *args,
                "--runner",
                runner,
                "--json",
            ],
            env,
            timeout=300,
        )
        return done.returncode, done.stdout, done.stderr

    def started(self, lock: Path, *args: str, url: str | None = None) -> subprocess.Popen[str]:
        """``pinbench run LOCK ARGS --runner local --json`` through the server at ``url`` (the
        world's), started in the namespace and not waited for."""
        env = dict(
            self.cluster.env, PINBENCH_URL=url or self.url, PINBENCH_TOKEN=self.tokens["owner"]
        )
        command = [str(BIN / "pinbench"), "run", str(lock), *args, "--runner", "local", "--json"]
        return subprocess.Popen(
            self.cluster.ns.command(command),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def dump_yaml(path: Path, data: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("cluster-runs")
    url = f"sqlite:///{root / 'pinbench.db'}"
    tokens, _ = seed_home(root / "home", url, catalog_dir)
    agents = {"lab-a": root / "cache-a", "lab-b": root / "cache-b"}
    with (
        ray_cluster(root / "home", url, agents) as cluster,
        served(cluster, PORT, "--cluster", ADDRESS, agent_token=tokens["reader"]) as server,
    ):
        yield World(cluster, server, tokens, root)


@pytest.fixture(scope="module")
def servers(world: World) -> Iterator[dict[str, str]]:
    """Servers on the same cluster and database, each allowing one runner list (``serve
    --runners``): the list -> the server's URL."""
    lists = ("local", "docker")
    with contextlib.ExitStack() as stack:
        yield {
            runners: stack.enter_context(
                served(
                    world.cluster,
                    PORT + 1 + i,
                    "--cluster",
                    ADDRESS,
                    "--runners",
                    runners,
                    agent_token=world.tokens["reader"],
                )
            )
            for i, runners in enumerate(lists)
        }


def _runs(world: World) -> int:
    ws = world.workspace()
    try:
        with ws.transaction() as session:
            return session.scalar(select(func.count()).select_from(Run)) or 0
    finally:
        ws.close()


def _running_on(ws: Workspace, system: str, timeout_s: float = 120) -> str | None:
    """The id of a run running on ``system``, once one is (None after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with ws.transaction() as session:
            row = session.scalars(
                select(Run).where(Run.system == system, Run.status == "running")
            ).first()
            if row is not None:
                return str(row.id)
        time.sleep(0.2)
    return None


def test_run_on_all_runs_once_on_each_system_with_blobs_fetched_by_digest(world: World) -> None:
    for agent in world.cluster.agents.values():
        assert not list(agent.cache.glob("blobs/*/*"))  # empty caches
    code, out, err = world.run_on(world.lock("all"), "all")
    assert code == 0, err
    infos = json.loads(out)
    assert sorted(i["system"] for i in infos) == ["lab-a", "lab-b"]
    assert all(i["status"] == "succeeded" and i["runner"] == "local" for i in infos)
    assert all(i["queries_count"] == 32 and i["latency_p50_ns"] > 0 for i in infos)
    lock_digest = infos[0]["lockfile"]
    ws = world.workspace()
    try:
        server_blobs = {p.name for p in ws.store.blobs.glob("*/*")}
        with ws.transaction() as session:
            rows = session.scalars(select(Run).where(Run.lockfile_digest == lock_digest)).all()
            assert sorted(r.system or "" for r in rows) == ["lab-a", "lab-b"]
            assert all(r.host.get("cpu") for r in rows)  # the agent's facts, as recorded
    finally:
        ws.close()
    for agent in world.cluster.agents.values():
        cached = {p.name for p in agent.cache.glob("blobs/*/*")}
        assert cached and cached <= server_blobs  # fetched into its own cache, by digest
    by_system = {i["system"]: i["id"] for i in infos}
    report = world.root / "across.md"
    done = world.cluster.pinbench(
        "runs", "report", by_system["lab-a"], by_system["lab-b"], "--md", str(report)
    )
    assert done.returncode == 0, done.stderr
    text = report.read_text()  # one model compared across the two systems
    assert "| system | lab-a | lab-b |" in text and "## One model across systems" in text


def test_placement_no_system_meets_is_refused_and_nothing_is_queued(world: World) -> None:
    before = _runs(world)
    code, _, err = world.run_on(world.lock("gpu", system={"gpu": "no-such-gpu"}), "all")
    assert code == 1
    assert "no system meets arch=amd64 device=cpu gpu=no-such-gpu" in err
    assert "lab-a: no no-such-gpu GPU" in err and "lab-b: no no-such-gpu GPU" in err
    assert _runs(world) == before


def test_a_named_system_that_does_not_exist_is_refused(world: World) -> None:
    before = _runs(world)
    code, _, err = world.run_on(world.lock("named"), "lab-a", "lab-z")
    assert code == 1 and "lab-z: no such system" in err
    assert _runs(world) == before


def test_a_system_lost_mid_run_fails_that_attempt_and_the_retry_succeeds_on_another_named(
    world: World,
) -> None:
    cluster = world.cluster
    doomed = cluster.start_agent("lab-c", world.root / "cache-c")
    lock = world.lock("long", scenario={"min_duration_ms": 8000, "min_query_count": 1})
    client = world.started(lock, "--on", "lab-c", "--on", "lab-a", "--retries", "1")
    ws = world.workspace()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with ws.transaction() as session:
                row = session.scalars(select(Run).where(Run.system == "lab-c")).first()
                if row is not None and row.status == "running":
                    break
            time.sleep(0.2)
        time.sleep(3)  # well into the evaluation
        doomed.stop(signal.SIGTERM)  # the machine goes: its Ray node stops
        out, err = client.communicate(timeout=240)
        assert client.returncode == 0, err
        first, retry, other = json.loads(out)
        assert first["system"] == "lab-c" and first["status"] == "failed"
        assert "system lab-c lost during the run" in first["error"]
        assert retry["retry_of"] == first["id"] and retry["status"] == "succeeded"
        assert retry["system"] == "lab-a"  # among the systems named, never lab-b
        assert other["system"] == "lab-a" and other["retry_of"] is None
        with ws.transaction() as session:
            rows = session.scalars(select(Run).where(Run.lockfile_digest == first["lockfile"]))
            assert sorted(r.status for r in rows) == ["failed", "succeeded", "succeeded"]
    finally:
        ws.close()
        if client.poll() is None:
            client.kill()


def test_an_agent_without_the_pinned_image_fails_the_run_with_the_reason(world: World) -> None:
    """The docker runner on an agent whose lockfile pins no image (none was built): the run
    ends failed, saying what to do, instead of waiting for its deadline."""
    code, out, err = world.run_on(world.lock("docker"), "lab-b", runner="docker")
    assert code == 1, err
    (info,) = json.loads(out)
    assert (info["status"], info["system"], info["runner"]) == ("failed", "lab-b", "docker")
    assert "pins no image for onnxruntime" in info["error"]
    assert "pinbench images build onnxruntime" in info["error"]


def test_a_cluster_run_is_not_rerun_on_other_hardware(world: World) -> None:
    ws = world.workspace()
    try:
        with ws.transaction() as session:
            run = session.scalars(select(Run).where(Run.system.is_not(None))).first()
            assert run is not None
            run_id, system = run.id, run.system
    finally:
        ws.close()
    done = world.cluster.pinbench("rerun", run_id)
    assert done.returncode == 1
    assert f"ran on cluster system {system}" in done.stderr
    assert f"--on {system}" in done.stderr


def test_the_api_lists_the_systems_as_the_cluster_sees_them(world: World) -> None:
    probe = (
        "import httpx, json, sys; base = sys.argv[1]; "
        "print(json.dumps([httpx.get(base + '/api/v1/systems').json(), "
        "httpx.get(base + '/api/v1/systems/lab-a').json(), "
        "httpx.get(base + '/api/v1/systems/lab-z').status_code]))"
    )
    done = world.cluster.ns.run([sys.executable, "-c", probe, world.url], world.cluster.env)
    assert done.returncode == 0, done.stderr
    listed, shown, missing = json.loads(done.stdout)
    alive = {row["name"]: row["alive"] for row in listed}
    assert alive["lab-a"] is True and alive["lab-b"] is True
    assert shown["name"] == "lab-a" and shown["facts"]["cpu_flags"] and shown["runs"] >= 1
    assert missing == 404


@pytest.mark.parametrize(
    ("runners", "status", "error"),
    [
        ("local", "succeeded", None),  # `auto` was venv on the agent, refused there: "lost"
        ("docker", "failed", "pins no image for onnxruntime"),  # the docker runner's own word
    ],
)
def test_auto_on_an_agent_picks_among_the_servers_runners(
    world: World, servers: dict[str, str], runners: str, status: str, error: str | None
) -> None:
    code, out, err = world.run_on(
        world.lock(f"auto-{runners}"), "lab-a", runner="auto", url=servers[runners], retries=1
    )
    (info,) = json.loads(out)  # one run: nothing retried
    assert (info["status"], info["system"], info["runner"]) == (status, "lab-a", runners), err
    assert code == (0 if error is None else 1)
    if error is not None:
        assert error in info["error"] and "lost" not in info["error"]


def test_an_agent_error_is_recorded_as_that_error_and_not_retried(
    world: World, servers: dict[str, str]
) -> None:
    """lab-b's cache holds other bytes under a pinned digest: the agent refuses them (a
    keyword-only ``ChecksumMismatch``, which Ray could not bring back as an exception). The
    run fails with that error, on that system; the system is not lost, nothing is retried."""
    lock = world.lock("corrupt")
    model = next(a for a in json.loads(lock.read_bytes())["artifacts"] if a["kind"] == "model")
    pinned = model["files"][0]["sha256"]
    blob = world.cluster.agents["lab-b"].cache / "blobs" / pinned[:2] / pinned
    blob.parent.mkdir(parents=True, exist_ok=True)
    kept = blob.read_bytes() if blob.exists() else None
    blob.write_bytes(b"not the pinned bytes")
    try:
        code, out, err = world.run_on(
            lock, "lab-b", "lab-a", runner="auto", url=servers["local"], retries=1
        )
    finally:
        if kept is None:
            blob.unlink()
        else:
            blob.write_bytes(kept)
    assert code == 1, err
    runs = {info["system"]: info for info in json.loads(out)}
    assert sorted(runs) == ["lab-a", "lab-b"]  # one each: no retry of lab-b's
    failed = runs["lab-b"]
    assert failed["status"] == "failed" and failed["retry_of"] is None
    assert failed["error"].startswith("on system lab-b: checksum mismatch for ")
    assert f"expected sha256 {pinned}" in failed["error"]
    assert "lost" not in failed["error"]
    assert runs["lab-a"]["status"] == "succeeded" and runs["lab-a"]["runner"] == "local"
    ws = world.workspace()
    try:
        with ws.transaction() as session:
            retried = session.scalars(select(Run).where(Run.retry_of == failed["id"])).all()
            assert retried == []
    finally:
        ws.close()


def test_a_study_on_the_agents_runs_through_the_server_and_resumes(world: World) -> None:
    """A study whose systems are the cluster's agents (issue 74): `study run FILE` with
    PINBENCH_URL posts it; the server runs each agent's cells in turn, the agents in parallel,
    and the client follows until it is done. Each cell is a run on its agent, recorded by the
    server; posting it again runs nothing; a local registry, and a server asked to run this
    machine's configurations, refuse it saying where it runs."""
    study: dict[str, object] = {
        "name": "on-agents",
        "models": [
            {
                "model": "vision/digits-logreg@^1",
                "framework": "onnxruntime@*",
                "dataset": "sklearn-digits-test@^1",
            }
        ],
        "scenarios": {
            "accuracy": {"name": "SingleStream", "mode": "accuracy"},
            "SingleStream": {"name": "SingleStream", "min_duration_ms": 0, "min_query_count": 64},
        },
        "systems": [{"name": "a", "agent": "lab-a"}, {"name": "b", "agent": "lab-b", "threads": 1}],
    }
    path = dump_yaml(world.root / "on-agents.yaml", study)
    env = dict(world.cluster.env, PINBENCH_URL=world.url, PINBENCH_TOKEN=world.tokens["owner"])
    pinbench = str(BIN / "pinbench")
    before = _runs(world)
    done = world.cluster.ns.run([pinbench, "study", "run", str(path)], env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count(": done run ") == 4, done.stderr
    assert "4 ran, 0 done before, 0 failed, 0 refused" in done.stdout
    shown = json.loads(
        world.cluster.ns.run([pinbench, "study", "show", "on-agents", "--json"], env).stdout
    )
    assert shown["active"] is False
    assert [s.get("agent") for s in shown["systems"]] == ["lab-a", "lab-b"]
    cells = sorted(shown["cells"], key=lambda c: (c["system"], c["scenario"] != "accuracy"))
    assert [(c["system"], c["scenario"], c["state"]) for c in cells] == [
        ("a", "accuracy", "done"),
        ("a", "SingleStream", "done"),
        ("b", "accuracy", "done"),
        ("b", "SingleStream", "done"),
    ]
    assert cells[0]["accuracy_metric"] == "top1" and cells[1]["latency_p90_ns"] > 0
    ws = world.workspace()
    try:
        with Registry.over(ws) as reg:
            for cell, agent in zip(cells, ["lab-a", "lab-a", "lab-b", "lab-b"], strict=True):
                run = reg.run(cell["run"])
                assert run.info["system"] == agent and run.info["status"] == "succeeded"
                lockfile = run.lockfile()
                assert lockfile.digest == cell["lockfile"] and lockfile.verify()
                assert run.info["threads"] == (1 if cell["system"] == "b" else None)
    finally:
        ws.close()
    assert _runs(world) == before + 4

    again = world.cluster.ns.run([pinbench, "study", "run", str(path)], env, timeout=120)
    assert again.returncode == 0 and "0 ran, 4 done before" in again.stdout, again.stdout
    assert _runs(world) == before + 4

    local = world.cluster.ns.run([pinbench, "study", "run", str(path)], world.cluster.env)
    assert local.returncode == 1 and "through the server that has that cluster" in local.stderr
    mine: dict[str, object] = {**study, "name": "here", "systems": [{"name": "x"}]}  # here
    here = dump_yaml(world.root / "here.yaml", mine)
    refused = world.cluster.ns.run([pinbench, "study", "run", str(here)], env)
    assert refused.returncode == 1 and "agents only" in refused.stderr, refused.stderr
    elsewhere: dict[str, object] = {**study, "name": "elsewhere",
                                    "systems": [{"name": "z", "agent": "lab-z"}]}  # fmt: skip
    unknown = world.cluster.ns.run(
        [pinbench, "study", "run", str(dump_yaml(world.root / "z.yaml", elsewhere))], env
    )
    assert unknown.returncode == 1 and "no system named 'lab-z'" in unknown.stderr
    listed = world.cluster.ns.run([pinbench, "study", "list", "--json"], env).stdout
    assert {s["name"] for s in json.loads(listed)} == {"on-agents"}  # nothing else recorded


def test_a_first_sigterm_waits_for_a_run_on_an_agent(world: World) -> None:
    """Issue 85, item 2: a server's first SIGTERM exited in 5.7 s (drain-seconds 120) with a
    run measuring on an agent, left ``running``: Ray, which a server joins as a driver, had put
    a handler of its own on SIGTERM that aborted the process three seconds later. The drain
    now waits for the agent's run, which succeeds, and the server then stops."""
    cluster = world.cluster
    lock = world.lock("drained", scenario={"min_duration_ms": 8000, "min_query_count": 1})
    drain = {"PINBENCH_DRAIN_S": "120", "PINBENCH_DRAIN_GRACE_S": "1"}
    with served_process(
        cluster, PORT + 9, "--cluster", ADDRESS, agent_token=world.tokens["reader"], env=drain
    ) as (url, server):
        client = world.started(lock, "--on", "lab-a", url=url)
        ws = world.workspace()
        try:
            run_id = _running_on(ws, "lab-a")
            assert run_id is not None, "the run never started on lab-a"
            os.kill(server, signal.SIGTERM)
            time.sleep(5)  # Ray's handler ended the process three seconds after the signal
            assert Path(f"/proc/{server}").exists(), "the server did not drain"
            _, err = client.communicate(timeout=180)
            with ws.transaction() as session:
                row = session.get(Run, run_id)
                assert row is not None and (row.status, row.error) == ("succeeded", None), err
        finally:
            ws.close()
            if client.poll() is None:
                client.kill()
        deadline = time.monotonic() + 60
        while Path(f"/proc/{server}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{server}").exists(), "the server did not stop after its drain"


def test_a_model_with_code_runs_on_every_agent_in_its_sandbox_audited(world: World) -> None:
    """Issue 85 item 1 (decisions 312, 313): a model with processing code (the catalog's
    magika part) runs on the agents once the server's operator allows code (``serve
    --allow-code``), in each agent's sandbox; the agent keeps the clock and audits the run
    (TEST04, TEST01), and the server records its verdicts. A server without that consent
    refuses the run and queues nothing."""
    folder = world.root / "magika"
    ws = world.workspace()
    try:
        for manifest in (*magika.write_datasets(folder), *magika.export(folder)):
            publish(ws, load_manifest(manifest), manifest_dir=folder, publisher="admin")
    finally:
        ws.close()
    scenario = {"min_duration_ms": 0, "min_query_count": 24, "max_query_count": 24}
    lock = world.lock("coded", model=f"{magika.NAME}@1", dataset=f"{magika.DATASET}@1",
                      scenario=scenario)  # fmt: skip
    before = _runs(world)
    code, _, err = world.run_on(lock, "all")
    assert code == 1 and "never executes processing code" in err, err
    assert _runs(world) == before
    consenting = served(
        world.cluster, PORT + 4, "--cluster", ADDRESS, "--allow-code",
        agent_token=world.tokens["reader"],
    )  # fmt: skip
    with consenting as url:
        code, out, err = world.run_on(lock, "all", url=url)
    assert code == 0, err
    runs = json.loads(out)
    assert sorted(r["system"] for r in runs) == ["lab-a", "lab-b"]
    ws = world.workspace()
    try:
        for info in runs:
            shown = show_run(ws, info["id"], nested=True)
            assert shown["status"] == "succeeded", shown["error"]
            details = shown["details"]
            assert details["code_sha256"] and details["environment"]["sandbox"] == "bwrap"
            assert details["clock"], details
            assert details["audits"]["TEST01"]["passed"] is True, details["audits"]
            assert "unique" in details["audits"]["TEST04"], details["audits"]  # measured
            # (its verdict is this busy machine's timing; TEST01's is the answers': exact)
    finally:
        ws.close()


def test_a_study_whose_agent_goes_and_comes_back_ends_with_every_cell_done(
    world: World,
) -> None:
    """Issue 85, item 3: an agent lost in the middle of a study's run. Its cell's run is
    recorded failed (the system lost), and the cell waits for the agent, saying so; the next
    cell waits too. When the agent comes back, each takes a run again; the study ends with every
    cell done, and the client that follows it exits 0, having said each change."""
    cluster = world.cluster
    agent = cluster.start_agent("lab-e", world.root / "cache-e")
    study: dict[str, object] = {
        "name": "comeback",
        "models": [{k: v for k, v in REQUEST.items() if k != "scenario"}],
        "scenarios": {
            "long": {"name": "SingleStream", "min_duration_ms": 8000, "min_query_count": 1},
            "short": {"name": "SingleStream", "min_duration_ms": 0, "min_query_count": 32},
        },
        "systems": [{"name": "e", "agent": "lab-e"}],
    }
    path = dump_yaml(world.root / "comeback.yaml", study)
    env = dict(cluster.env, PINBENCH_URL=world.url, PINBENCH_TOKEN=world.tokens["owner"])
    pinbench = str(BIN / "pinbench")
    client = subprocess.Popen(
        cluster.ns.command([pinbench, "study", "run", str(path)]),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def cells() -> dict[str, dict[str, object]]:
        done = cluster.ns.run([pinbench, "study", "show", "comeback", "--json"], env)
        assert done.returncode == 0, done.stderr
        return {c["scenario"]: c for c in json.loads(done.stdout)["cells"]}

    ws = world.workspace()
    try:
        lost = _running_on(ws, "lab-e")
        assert lost is not None, "the study's first run never started on lab-e"
        time.sleep(2)
        agent.stop(signal.SIGTERM)  # the machine goes
        deadline = time.monotonic() + 120
        while "waiting for agent lab-e" not in str(cells()["long"]["reason"]):
            assert time.monotonic() < deadline, [
                (c["state"], c["reason"], c["run"]) for c in cells().values()
            ]
            time.sleep(0.5)
        shown = cells()
        assert shown["long"]["state"] == "planned" and lost[:8] in str(shown["long"]["reason"])
        assert shown["short"]["state"] == "planned"  # not run, not ended
        cluster.start_agent("lab-e", world.root / "cache-e")  # the machine is back
        out, err = client.communicate(timeout=240)
        assert client.returncode == 0, out + err
        assert "2 ran, 0 done before, 0 failed, 0 refused" in out, out
        assert "long on e: planned" in err and "waiting for agent lab-e to come back" in err, err
        shown = cells()
        assert {k: c["state"] for k, c in shown.items()} == {"long": "done", "short": "done"}
        assert shown["long"]["run"] != lost
        with ws.transaction() as session:
            row = session.get(Run, lost)
            assert row is not None and row.status == "failed"
            assert (row.error or "").startswith("system lab-e lost during the run")
    finally:
        ws.close()
        if client.poll() is None:
            client.kill()
