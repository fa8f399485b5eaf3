"""Agents on a Ray cluster: a machine joins as a Ray node and registers itself as a system.

``pinbench agent start`` runs ``ray start --address CLUSTER --block`` with one custom resource,
``pinbench-system:NAME``, and the label ``pinbench.io/system=NAME``: placing work on a system is
asking Ray for that resource, so placement is Ray's (decision 103). It then connects to the
cluster as a driver and starts a detached actor pinned to its own node
(``agent:NAME`` in the ``pinbench`` namespace) that answers with the machine's facts, read on
that node. The agent stays in the foreground; stopping it (Ctrl-C, SIGTERM) removes the actor
and stops its Ray node, which is also what losing the machine looks like to the cluster.

Everything that imports Ray is in this module; nothing else of pinbench loads it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from pinbench.cluster.facts import checked_facts, system_facts
from pinbench.errors import UserError
from pinbench.specs.system_names import check_name

NAMESPACE = "pinbench"
RESOURCE_PREFIX = "pinbench-system:"
LABEL = "pinbench.io/system"
JOIN_TIMEOUT_S = 60.0
FACTS_TIMEOUT_S = 10.0
_CONNECTING = threading.Lock()


def actor_name(system: str) -> str:
    return f"agent:{system}"


def resource(system: str) -> str:
    return f"{RESOURCE_PREFIX}{system}"


class ClusterUnavailable(UserError):
    def __init__(self, address: str, reason: str) -> None:
        self.address = address
        self.reason = reason
        super().__init__(f"cannot reach the Ray cluster at {address}: {reason}")


class SystemTaken(UserError):
    def __init__(self, name: str, node_id: str) -> None:
        self.name = name
        self.node_id = node_id
        super().__init__(
            f"a live system named {name!r} is already in the cluster (Ray node {node_id}); "
            "choose another --name"
        )


@dataclass(frozen=True)
class ClusterSystem:
    name: str
    facts: dict[str, Any] | None
    """None when the system's agent did not answer (its node is gone)."""
    node_id: str | None
    alive: bool


def ray_module() -> Any:
    """The ``ray`` module, loosely typed (its stubs are partial). Its failure signal handler
    is kept out of this process (``RAY_DISABLE_FAILURE_SIGNAL_HANDLER``, read when ``ray`` is
    first imported): connected as a driver, Ray's core worker installed one for SIGTERM that
    aborted the process three seconds after the signal, so a server's first SIGTERM, which
    drains its runs for ``--drain-seconds``, ended it with its runs on agents still measuring
    (issue 85, item 2)."""
    import os

    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    import ray

    return ray


def connect(address: str) -> None:
    """Connect this process to the cluster as a driver (quietly), once."""
    ray = ray_module()
    with _CONNECTING:
        if not ray.is_initialized():
            _init(ray, address)


def _init(ray: Any, address: str) -> None:
    try:
        ray.init(
            address=address,
            namespace=NAMESPACE,
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterUnavailable(address, str(exc).splitlines()[0]) from None


def _nodes_by_system() -> dict[str, dict[str, Any]]:
    """The newest Ray node of each system (alive before dead), by the label it joined with."""
    ray = ray_module()

    found: dict[str, dict[str, Any]] = {}
    for node in ray.nodes():
        name = (node.get("Labels") or {}).get(LABEL)
        if name is None:
            continue
        if name not in found or (node["Alive"] and not found[name]["Alive"]):
            found[name] = node
    return found


def cluster_systems(
    address: str, known: Mapping[tuple[str, str], dict[str, Any]] | None = None
) -> list[ClusterSystem]:
    """Every system that joined the cluster (alive or not), with the facts its agent reports.
    ``known``: facts already asked of a (system, Ray node id); a node's machine does not change
    while it lives, so those are not asked again (a restarted agent is a new node)."""
    ray = ray_module()
    connect(address)
    out = []
    for name, node in sorted(_nodes_by_system().items()):
        facts: dict[str, Any] | None = None
        cached = (known or {}).get((name, node["NodeID"]))
        if node["Alive"] and cached is not None:
            facts = cached
        elif node["Alive"]:
            try:
                agent = ray.get_actor(actor_name(name), namespace=NAMESPACE)
                facts = checked_facts(ray.get(agent.facts.remote(), timeout=FACTS_TIMEOUT_S))
            except (ValueError, ray.exceptions.RayError):
                facts = None
        out.append(ClusterSystem(name, facts, node["NodeID"], bool(node["Alive"])))
    return out


WAITING = "waiting for the agent's evaluation in progress to end"
WAIT_POLL_S = 0.2
"""How often an evaluation waiting for the agent looks whether it was cancelled."""
CANCELLED_KEPT = 1000
"""Cancelled tickets an agent remembers until their evaluation comes (``Agent.cancel``)."""


class Agent:
    """The actor on an agent's node (made remote in ``_start_actor``, with a few threads so
    that ``progress`` answers while ``run`` runs); one evaluation at a time."""

    def __init__(
        self, name: str, cache: str, warm: bool = False, price_per_hour: float | None = None
    ) -> None:
        import threading

        from pinbench.energy.price import parse_price

        self.name = name
        self.cache = cache
        self.price = (
            None
            if price_per_hour is None
            else parse_price(price_per_hour, f"agent start --price-per-hour (system {name})")
        )
        """The price it declared, recorded with each run it does (``details.cost``)."""
        self._warm: Any = None
        """``agent start --warm``: this agent's ``WarmPool`` (its folders in the cache's tmp)."""
        if warm:
            from pinbench.evaluator.warm import WarmPool

            self._warm = WarmPool.in_scratch(Path(cache) / "tmp")
        self._one = threading.Lock()
        self._cancelling = threading.Lock()
        self._progress = ""
        self._stop: Any = None
        """The running evaluation's ``Stop`` (``cancel`` requests it)."""
        self._ticket = ""
        """The running evaluation's ticket: the server's name for it (``OnSystem``)."""
        self._cancelled: dict[str, str] = {}
        """Tickets cancelled before their evaluation started (waiting for the one running),
        with the reason; each is answered stopped when it comes (at most ``CANCELLED_KEPT``)."""
        self.served = 0
        self._facts = system_facts()
        """Read once: the machine does not change while the agent runs (tens of ms a time)."""

    def facts(self) -> dict[str, Any]:
        return self._facts

    def rendezvous(self) -> dict[str, Any]:
        """Where a training's rank 0 on this machine will meet ranks on others (``spread``)."""
        from pinbench.training.distributed.placement import free_port

        address = ray_module().util.get_node_ip_address()
        return {"address": address, "port": free_port(address)}

    def close(self) -> None:
        """End the warm evaluators (a container would otherwise outlive the agent)."""
        if self._warm is not None:
            self._warm.close()

    def progress(self, ticket: str = "") -> str:
        """The running evaluation's last line, if it is ``ticket``'s; else that it waits."""
        if ticket != self._ticket:
            return WAITING
        return self._progress

    def cancel(self, reason: str, ticket: str = "") -> bool:
        """Stop ``ticket``'s evaluation (the server's cancel, shutdown or deadline): the one
        running if it is that one; one still waiting is answered stopped when it comes. Never
        another's: a cancel names its evaluation."""
        from pinbench.worker.stop import RunStopped

        with self._cancelling:
            stop = self._stop if ticket == self._ticket else None
            if stop is None:
                if len(self._cancelled) >= CANCELLED_KEPT:
                    self._cancelled.pop(next(iter(self._cancelled)))
                self._cancelled[ticket] = reason[:2000]
                return True
        return bool(stop.request(RunStopped(status="cancelled", reason=reason[:2000])))

    def run(
        self,
        lock_bytes: bytes,
        server: str,
        token: str,
        runner: str,
        trace: str,
        allow_pickle: bool,
        allowed: tuple[str, ...],
        allow_code: bool = False,
        audit: bool = False,
        ticket: str = "",
        ranks: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run a lockfile here; the answer as plain data (``pinbench.cluster.answer``): an
        error is never raised to the server, where Ray would have to unpickle it. ``ticket``:
        the server's name for this evaluation, which its ``progress`` and ``cancel`` give;
        ``ranks``: this machine's share of a training's ranks (``placement``)."""
        from pinbench.cluster.agent_run import run_here
        from pinbench.cluster.answer import answer_error, answer_ok
        from pinbench.worker.stop import RunStopped, Stop

        def say(text: str) -> None:
            self._progress = text

        while not self._one.acquire(timeout=WAIT_POLL_S):  # another evaluation holds it
            with self._cancelling:
                cancelled = self._cancelled.pop(ticket, None)
            if cancelled is not None:  # cancelled while it waited: it never starts
                return answer_error(RunStopped(status="cancelled", reason=cancelled))
        try:
            with self._cancelling:
                cancelled = self._cancelled.pop(ticket, None)
                if cancelled is None:
                    self._progress, self._stop, self._ticket = (
                        "started on the agent",
                        Stop(),
                        ticket,
                    )
            if cancelled is not None:
                return answer_error(RunStopped(status="cancelled", reason=cancelled))
            try:
                packed = run_here(
                    Path(self.cache),
                    lock_bytes,
                    server=server,
                    token=token,
                    runner=runner,
                    trace=trace,
                    allow_pickle=allow_pickle,
                    allow_code=allow_code,
                    allowed=tuple(allowed),
                    say=say,
                    stop=self._stop,
                    warm=self._warm,
                    price=self.price,
                    audit=audit,
                    ranks=ranks,
                )
            except Exception as exc:  # every error the evaluation raises: the server's to record
                return answer_error(exc)
            finally:
                with self._cancelling:
                    self._stop, self._ticket = None, ""
            self.served += 1
            return answer_ok(packed)
        finally:
            self._one.release()


def start_agent(
    cluster: str,
    name: str,
    cache: Path,
    *,
    node_ip: str | None = None,
    warm: bool = False,
    price_per_hour: float | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """Join ``cluster`` as system ``name`` and stay until stopped; return the exit code.
    ``warm``: the agent keeps warm evaluators (``pinbench.evaluator.warm``).
    ``price_per_hour``: the price its runs record (``pinbench.energy.price``)."""
    check_name(name)
    from pinbench.artifacts.destination import folder
    from pinbench.programs import beside_python

    folder(cache, option="--cache", parents=True)
    command = [
        str(beside_python("ray")),
        "start",
        f"--address={cluster}",
        "--block",
        "--disable-usage-stats",
        f"--resources={json.dumps({resource(name): 1})}",
        f"--labels={LABEL}={name}",
    ]
    if node_ip is not None:
        command.append(f"--node-ip-address={node_ip}")
    connect(cluster)
    taken = _nodes_by_system().get(name)
    if taken is not None and taken["Alive"]:
        raise SystemTaken(name, taken["NodeID"])
    node = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        node_id = _wait_for_node(name, node)
        actor = _start_actor(name, cache, node_id, warm, price_per_hour)
        say(f"agent {name} joined {cluster} as Ray node {node_id}; stop it with Ctrl-C")
        while not stopping and node.poll() is None:
            time.sleep(0.2)
        if node.poll() is not None and not stopping:
            say(f"agent {name}: its Ray node stopped (exit {node.returncode})")
            return 1
        with contextlib.suppress(Exception):  # the actor's own failure: it is killed anyway
            ray_module().get(actor.close.remote(), timeout=30)
        ray_module().kill(actor)
        return 0
    finally:
        if node.poll() is None:
            node.terminate()
            try:
                node.wait(30)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _wait_for_node(name: str, node: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while time.monotonic() < deadline:
        if node.poll() is not None:
            assert node.stderr is not None
            tail = node.stderr.read().decode(errors="replace").strip().splitlines()[-3:]
            raise UserError(f"`ray start` exited {node.returncode}: {' / '.join(tail)}")
        found = _nodes_by_system().get(name)
        if found is not None and found["Alive"]:
            return str(found["NodeID"])
        time.sleep(0.2)
    raise UserError(f"the Ray node of system {name!r} did not join within {JOIN_TIMEOUT_S:.0f} s")


def _start_actor(
    name: str, cache: Path, node_id: str, warm: bool, price_per_hour: float | None
) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray = ray_module()
    with contextlib.suppress(ValueError):  # an actor left by an agent whose node died
        ray.kill(ray.get_actor(actor_name(name), namespace=NAMESPACE))
    remote = ray.remote(num_cpus=0, max_concurrency=4)(Agent)
    actor = remote.options(
        name=actor_name(name),
        namespace=NAMESPACE,
        lifetime="detached",
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote(name, str(cache), warm, price_per_hour)
    ray.get(actor.facts.remote(), timeout=JOIN_TIMEOUT_S)  # up and answering
    return actor
