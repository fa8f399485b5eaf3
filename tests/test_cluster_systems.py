"""Agents join a real Ray cluster (head + agents, loopback-only namespace: tests/cluster.py) as
systems: each registers the facts read on its own node, `pinbench systems list|show` shows
them with Ray's answer on whether each is alive, a name cannot be taken twice, and an agent
that stops is gone."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinbench.cluster.facts import default_name, system_facts
from pinbench.cluster.systems import UnknownSystem, list_systems, record, show_system
from pinbench.config import Settings
from pinbench.specs.system_names import BadSystemName, check_name
from pinbench.workspace import Workspace
from tests.cluster import ADDRESS, HEAD_IP, ONE_CLUSTER, Cluster, ray_cluster
from tests.helpers import Cli

pytestmark = ONE_CLUSTER  # one Ray cluster at a time (tests/cluster.py)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    url = f"sqlite:///{root / 'pinbench.db'}"
    ws = Workspace(Settings(home=root / "home", database_url=url))
    ws.init()
    ws.close()
    agents = {"lab-a": root / "cache-a", "lab-b": root / "cache-b"}
    with ray_cluster(root / "home", url, agents) as running:
        yield running


def _listed(cluster: Cluster) -> dict[str, dict[str, object]]:
    done = cluster.pinbench("systems", "list", "--cluster", ADDRESS, "--json")
    assert done.returncode == 0, done.stderr
    return {row["name"]: row for row in json.loads(done.stdout)}


def test_each_agent_is_a_live_system_with_its_own_node_and_facts(cluster: Cluster) -> None:
    rows = _listed(cluster)
    assert set(rows) == {"lab-a", "lab-b"}
    mine = system_facts()
    for row in rows.values():
        assert row["alive"] is True and row["runs"] == 0
        facts = row["facts"]
        assert isinstance(facts, dict)
        assert facts["cpu"] == mine["cpu"] and facts["cores"] == mine["cores"]
        assert facts["cpu_flags"] == mine["cpu_flags"] and facts["arch"] == mine["arch"]
    assert rows["lab-a"]["node_id"] != rows["lab-b"]["node_id"]
    assert (cluster.agents["lab-a"].cache).is_dir()


def test_each_agent_is_a_machine_of_its_own_on_the_clusters_network(cluster: Cluster) -> None:
    """Issue 85, item 6: Ray's nodes are the head and one per agent, each at its own address
    on the cluster's network (none on a loopback they share)."""
    script = (
        "import json, ray\n"
        f"ray.init(address={ADDRESS!r}, logging_level='ERROR', log_to_driver=False)\n"
        "print(json.dumps(sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive'])))"
    )
    done = cluster.ns.run([sys.executable, "-c", script], cluster.env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    addresses = json.loads(done.stdout.strip().splitlines()[-1])
    machines = sorted(ip for _, ip in cluster.machines.values())
    assert addresses == sorted([HEAD_IP, *machines]) and len(set(addresses)) == 3, addresses


def test_the_table_lists_what_the_cluster_said_and_show_names_the_systems(
    cluster: Cluster,
) -> None:
    table = cluster.pinbench("systems", "list", "--cluster", ADDRESS)
    assert table.returncode == 0, table.stderr
    header, *lines = table.stdout.splitlines()
    assert header.split() == ["NAME", "ALIVE", "ARCH", "CPU", "CORES", "GPUS", "RUNS"]
    assert [line.split()[:2] for line in lines] == [["lab-a", "alive"], ["lab-b", "alive"]]
    offline = cluster.pinbench("systems", "list")  # the database's record, no cluster asked
    assert [line.split()[:2] for line in offline.stdout.splitlines()[1:]] == [
        ["lab-a", "unknown"],
        ["lab-b", "unknown"],
    ]
    shown = cluster.pinbench("systems", "show", "lab-b", "--cluster", ADDRESS)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("system lab-b (alive), Ray node ")
    assert "cpu_flags: " in shown.stdout
    missing = cluster.pinbench("systems", "show", "lab-z")
    assert missing.returncode == 1
    assert "no system named 'lab-z'; the systems are: lab-a, lab-b" in missing.stderr


def test_a_live_systems_name_cannot_be_taken(cluster: Cluster, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="a live system named 'lab-a' is already in the cluster"):
        cluster.start_agent("lab-a", tmp_path / "cache")
    assert _listed(cluster)["lab-a"]["alive"] is True


def test_an_agent_that_stops_is_gone(cluster: Cluster, tmp_path: Path) -> None:
    agent = cluster.start_agent("lab-c", tmp_path / "cache-c")
    assert _listed(cluster)["lab-c"]["alive"] is True
    assert agent.stop(signal.SIGTERM) == 0
    rows = _listed(cluster)
    assert rows["lab-c"]["alive"] is False
    assert rows["lab-a"]["alive"] is True and rows["lab-b"]["alive"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "start", "--name", "lab-q"], "which cluster? give --cluster HOST:PORT"),
        (
            ["agent", "start", "--cluster", ADDRESS, "--name", "Lab_Q"],
            "system name 'Lab_Q': use lowercase letters",
        ),
    ],
)
def test_an_agent_that_cannot_start_says_why(
    cluster: Cluster, args: list[str], message: str
) -> None:
    done = cluster.pinbench(*args)
    assert done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------- without a cluster


@pytest.mark.parametrize("name", ["lab-a", "a", "gpu-h100-2", "x" * 63])
def test_a_system_name_is_a_dns_label(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "Lab", "-a", "a-", "a_b", "a.b", "x" * 64, "a b", "ä"])
def test_other_names_are_refused(name: str) -> None:
    with pytest.raises(BadSystemName):
        check_name(name)


def test_the_default_name_comes_from_the_host_and_is_valid() -> None:
    assert check_name(default_name()) == default_name()


def test_systems_are_recorded_and_refreshed(ws: Workspace) -> None:
    record(ws, "lab-a", {"cpu": "old"}, "n1")
    record(ws, "lab-a", {"cpu": "new"}, "n2")
    record(ws, "lab-b", {"cpu": "b"}, None)
    rows = list_systems(ws, {"lab-a": True})
    assert [(r.name, r.facts["cpu"], r.node_id, r.alive) for r in rows] == [
        ("lab-a", "new", "n2", True),
        ("lab-b", "b", None, False),
    ]
    assert rows[0].seen_at >= rows[0].registered_at
    assert show_system(ws, "lab-b").alive is None
    with pytest.raises(UnknownSystem, match="the systems are: lab-a, lab-b"):
        show_system(ws, "lab-c")
    with pytest.raises(BadSystemName):
        record(ws, "Bad Name", {}, None)
    assert [r.name for r in list_systems(ws)] == ["lab-a", "lab-b"]


def test_one_system_recorded_by_two_writers_at_once_is_one_row(ws_any: Workspace) -> None:
    """Two runs placed on a system the server has not seen yet (two users, or a study's
    agents in parallel) both record it: neither fails on the unique name."""
    import threading

    ready = threading.Barrier(8)
    failed: list[BaseException] = []

    def write(n: int) -> None:
        ready.wait()
        try:
            record(ws_any, "lab-a", {"cpu": f"c{n}"}, f"n{n}")
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    (row,) = list_systems(ws_any)
    assert row.name == "lab-a" and row.facts["cpu"] in {f"c{n}" for n in range(8)}


# ---------------------------------------------------------------- serve --cluster refusals


@pytest.fixture
def tokens(ws: Workspace) -> dict[str, str]:
    from pinbench import accounts
    from pinbench.api_tokens import create_token

    out = {}
    with ws.writes() as rows:
        accounts.add_user(rows, "agents")
        for scopes in (["read"], ["read", "run"]):
            out["+".join(scopes)] = create_token(rows, "agents", name="t", scopes=scopes)[2]
    return out


@pytest.mark.parametrize(
    ("token", "args", "message"),
    [
        (None, [], "serve --cluster needs PINBENCH_AGENT_TOKEN"),
        ("read+run", [], "must be a token with the 'read' scope only"),
        ("read", ["--host", "0.0.0.0"], "is no address an agent can reach: give --agent-url"),
        ("read", ["--agent-url", "10.0.0.1:8000"], "is not an http(s) URL with a host"),
        ("read", ["--agent-url", "http://"], "is not an http(s) URL with a host"),
        ("read", ["--agent-url", "http://*.example.org/"], "(no wildcard)"),
        ("read", ["--agent-url", "http://[::1"], "is not an http(s) URL with a host"),
    ],
)
def test_serve_with_a_cluster_refuses_what_agents_cannot_use(
    ws: Workspace,
    tokens: dict[str, str],
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    token: str | None,
    args: list[str],
    message: str,
) -> None:
    if token is None:
        monkeypatch.delenv("PINBENCH_AGENT_TOKEN", raising=False)
    else:
        monkeypatch.setenv("PINBENCH_AGENT_TOKEN", tokens[token])
    done = cli("serve", "--cluster", "127.0.0.1:9", *args)
    assert done.code == 1
    assert message in done.err
