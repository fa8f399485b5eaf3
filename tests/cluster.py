"""A real Ray cluster for the tests: a head and a server on one network, each agent a machine.

Ray advertises a machine's outside address even when told otherwise, and on the test machine
that address must not be used, so every Ray process and every command that talks to the
cluster runs inside network namespaces of the test's own (and one PID namespace: ending the
holder ends every process started in it, however the test ends). The holder's namespace is
the head's and the server's machine: ``lo`` and a bridge, ``HEAD_IP`` on it. Each agent is a
machine of its own (issue 85, item 6): a network namespace with only ``lo`` and an ``eth0``
cabled to that bridge, its own address (``Cluster.machine``), its own home and its cache, so
what an agent and the server say to each other crosses a network as a real cluster's does
(Ray's GCS, object transfers, the blob API at the server's ``--agent-url``), never a loopback
they share. Commands are started in the namespaces with ``nsenter`` (and ``ip netns exec``
for an agent); the database and blob store are ordinary files of the server's, which an agent
is never given. Ray's session folders (``/tmp/ray``) are a tmpfs of the namespace's own, gone
with it.

Under pytest-xdist the modules that start a cluster are in one group (``ONE_CLUSTER``), so one
cluster runs at a time: their ports and ``/tmp/ray`` are the namespace's own and would not
clash, but a head and two agents take this two-core, 23 GiB machine's second core and
gigabytes of memory, and the agents' 120 s joining deadline is for a cluster that has them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ONE_CLUSTER = pytest.mark.xdist_group(name="ray-cluster")
"""``pytestmark`` of each module that starts a Ray cluster: they run on one worker."""

PORT = 6379
SUBNET = "10.88.0"
HEAD_IP = f"{SUBNET}.1"
"""The head's and the server's address on the cluster's network (the bridge ``pb0``)."""
ADDRESS = f"{HEAD_IP}:{PORT}"
BIN = Path(sys.executable).parent


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(p) for p in text]
    return found


@dataclass
class Namespace:
    """The holder process (``unshare``) and the namespaces' first process inside it."""

    holder: subprocess.Popen[bytes]
    inner: int

    def command(self, args: Sequence[str]) -> list[str]:
        return ["nsenter", "-t", str(self.inner), "-n", "-p", "-m", "--", *args]

    def run(
        self, args: Sequence[str], env: dict[str, str], timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(args), env=env, capture_output=True, text=True, timeout=timeout
        )


@contextmanager
def namespace() -> Iterator[Namespace]:
    if shutil.which("unshare") is None or shutil.which("nsenter") is None or os.geteuid() != 0:
        raise RuntimeError("the cluster tests need root, unshare and nsenter (util-linux)")
    holder = subprocess.Popen(
        [
            "unshare",
            "--net",
            "--pid",
            "--mount-proc",
            "--kill-child",
            "sh",
            "-c",
            "ip link set lo up && ip link add pb0 type bridge"
            f" && ip addr add {HEAD_IP}/24 dev pb0 && ip link set pb0 up"
            " && mkdir -p /tmp/ray && mount -t tmpfs tmpfs /tmp/ray"
            " && mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns"
            " && echo up && exec sleep 100000",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        if holder.stdout.readline() != b"up\n":
            raise RuntimeError("could not bring up the cluster's namespace")
        (inner,) = _children(holder.pid)
        yield Namespace(holder, inner)
    finally:
        holder.kill()  # --kill-child: the namespace's first process dies, and all in it
        holder.wait()


@dataclass
class Agent:
    name: str
    cache: Path
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal the agent itself (inside the namespace), wait for it; its exit code."""
        with contextlib.suppress(ProcessLookupError, FileNotFoundError):  # already gone
            for pid in _children(self.process.pid):
                os.kill(pid, sig)
        return self.process.wait(60)


@dataclass
class Cluster:
    ns: Namespace
    env: dict[str, str]
    agents: dict[str, Agent] = field(default_factory=dict)
    machines: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Each agent's machine, by the agent's name: its network namespace and its address."""

    def pinbench(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.ns.run([str(BIN / "pinbench"), *args], self.env, timeout)

    def machine(self, name: str) -> tuple[str, str]:
        """The machine agent ``name`` runs on (made the first time): a network namespace with
        ``lo`` and an ``eth0`` cabled to the cluster's bridge, its own address on it."""
        if name in self.machines:
            return self.machines[name]
        k = len(self.machines)
        netns, ip = f"m{k}", f"{SUBNET}.{10 + k}"
        steps = [
            ["ip", "netns", "add", netns],
            ["ip", "link", "add", f"vh{k}", "type", "veth", "peer", "name", "eth0", "netns", netns],
            ["ip", "link", "set", f"vh{k}", "master", "pb0", "up"],
            ["ip", "netns", "exec", netns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0"],
            ["ip", "netns", "exec", netns, "ip", "link", "set", "eth0", "up"],
            ["ip", "netns", "exec", netns, "ip", "link", "set", "lo", "up"],
        ]
        for step in steps:
            done = self.ns.run(step, self.env)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(step)}: {done.stderr}")
        self.machines[name] = (netns, ip)
        return netns, ip

    def agent_env(self, cache: Path) -> dict[str, str]:
        """An agent machine's environment: a home of its own beside its cache, and no
        database (the server's is not on that machine)."""
        env = {k: v for k, v in self.env.items() if k != "PINBENCH_DATABASE_URL"}
        return env | {"PINBENCH_HOME": str(cache.parent / f"{cache.name}-home")}

    def start_agent(self, name: str, cache: Path, *extra: str) -> Agent:
        """``pinbench agent start`` with ``extra`` options on its own machine, once it has
        joined; stopped with the cluster (it is registered before it is waited for)."""
        netns, ip = self.machine(name)
        command = ["ip", "netns", "exec", netns, str(BIN / "pinbench"), "agent", "start"]
        command += ["--cluster", ADDRESS, "--name", name]
        command += ["--cache", str(cache), "--node-ip", ip, *extra]
        process = subprocess.Popen(
            self.ns.command(command),
            env=self.agent_env(cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        agent = Agent(name, cache, process)
        self.agents[name] = agent
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"agent {name} ended: {''.join(agent.lines)}")
            agent.lines.append(line)
            if f"agent {name} joined" in line:
                return agent
        raise RuntimeError(f"agent {name} did not join: {''.join(agent.lines)}")


@contextmanager
def served(
    cluster: Cluster, port: int, *args: str, agent_token: str | None = None
) -> Iterator[str]:
    """``pinbench serve ARGS`` inside the namespace (``--cluster ADDRESS`` among them for a
    server on the cluster, with ``agent_token``); its URL there, once it answers."""
    with served_process(cluster, port, *args, agent_token=agent_token) as (url, _):
        yield url


@contextmanager
def served_process(
    cluster: Cluster,
    port: int,
    *args: str,
    agent_token: str | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[str, int]]:
    """``served``, with ``env`` added to the server's environment: its URL and the server's
    process id (in this namespace's view)."""
    env = dict(cluster.env, **(env or {}))
    if agent_token is not None:
        env["PINBENCH_AGENT_TOKEN"] = agent_token
    log = Path(cluster.env["PINBENCH_HOME"]) / f"serve-{port}.log"
    if "--cluster" in args:  # reached by the agents on the cluster's network
        args = ("--host", "0.0.0.0", "--agent-url", f"http://{HEAD_IP}:{port}", *args)
    with log.open("wb") as out:
        process = subprocess.Popen(
            cluster.ns.command([str(BIN / "pinbench"), "serve", "--port", str(port), *args]),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            probe = cluster.ns.run(
                [
                    sys.executable,
                    "-c",
                    f"import httpx; httpx.get('{url}/api/v1/health').raise_for_status()",
                ],
                cluster.env,
            )
            if probe.returncode == 0:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pinbench serve did not start: {log.read_text()[-3000:]}")
            time.sleep(0.3)
        yield url, _children(process.pid)[0]  # nsenter's one child: the server
    finally:
        with contextlib.suppress(ProcessLookupError, FileNotFoundError):  # already gone
            for pid in _children(process.pid):
                os.kill(pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


STARTUP_TIMEOUT = "The current node timed out during startup"
"""Ray's own message when its raylet has not registered within its fixed 30 s: a machine too
loaded, not pinbench (the cluster fixture then starts a new namespace once more)."""


@contextmanager
def ray_cluster(home: Path, database_url: str, agents: dict[str, Path]) -> Iterator[Cluster]:
    """A head node (no system of its own) and one agent per name, each with its cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PINBENCH_", "RAY_"))}
    env |= {
        "PINBENCH_HOME": str(home),
        "PINBENCH_DATABASE_URL": database_url,
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    for attempt in (1, 2):  # Ray waits 30 s for its raylet, a limit a loaded machine can pass
        with namespace() as ns:
            head = ns.run(
                [
                    str(BIN / "ray"),
                    "start",
                    "--head",
                    f"--node-ip-address={HEAD_IP}",
                    f"--port={PORT}",
                    "--num-cpus=1",
                    "--include-dashboard=false",
                    "--disable-usage-stats",
                ],
                env,
            )
            if head.returncode != 0 and attempt == 1 and STARTUP_TIMEOUT in head.stderr:
                print("ray start --head: the node timed out starting; again", file=sys.stderr)
                continue
            if head.returncode != 0:
                raise RuntimeError(f"ray start --head failed: {head.stderr[-2000:]}")
            cluster = Cluster(ns, env)
            try:
                for name, cache in agents.items():  # one at a time: nodes starting together race
                    cluster.start_agent(name, cache)
                yield cluster
            finally:
                for agent in cluster.agents.values():
                    if agent.process.poll() is None:
                        agent.stop()
            return
