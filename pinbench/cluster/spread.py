"""A training run whose ranks are spread over several systems (``distributed.systems``,
decision 317): which systems run it together, and the server's side of its other systems.

``runs_of`` cuts the systems a submission chose into runs of ``systems`` each, the first of
each run leading. The leader's ``OnSystem`` asks its agent for a free port on its address
(``Agent.rendezvous``) and hands ``Peers`` the rendezvous: each other system is sent the same
lockfile with its share of the ranks (``placement.RankPlacement``); its agent fetches and
checks every pinned byte as for any run, and its worker's ranks meet rank 0's. The run's
record is the leader's alone; a peer's answer only says whether its ranks trained. A peer
that fails or is lost fails the run naming it, and every other system's evaluation is
cancelled.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pinbench.cluster.answer import lost_errors, printable, read_error
from pinbench.errors import UserError
from pinbench.registry.lockfile import Lockfile
from pinbench.training.distributed.placement import RankPlacement, parse
from pinbench.worker.stop import Stop

RENDEZVOUS_S = 10.0
"""How long the leader's agent may take to name its address and a free port."""
FINISH_S = 120.0
"""How long a peer may take to answer once the leader's ranks finished (its results packed)."""
CANCEL_S = 5.0
START_S = 60.0
"""How long every system of a spread run may take to start its evaluation (its agent busy
with another one until then) before the run fails naming it."""
PROGRESS_S = 5.0
POLL_S = 0.5


class SpreadRefused(UserError):
    """A submission whose systems cannot be cut into runs of ``distributed.systems``."""

    def __init__(self, *, systems: int, chosen: Sequence[str], reason: str) -> None:
        super().__init__(
            f"distributed.systems = {systems}: {reason} (systems meeting the lockfile: "
            f"{', '.join(chosen) or 'none'})"
        )
        self.systems = systems
        self.chosen = list(chosen)
        self.reason = reason


def runs_of(
    lock: Lockfile, chosen: Sequence[str], named: bool, *, allowed: bool
) -> list[list[str]]:
    """The systems of each run to queue: one each, or for ranks spread over ``k`` systems
    (where the server's operator ``allowed`` it: ``serve --allow-spread``), the ``named``
    systems as one run (exactly ``k``), or every system meeting the lockfile (``--on all``,
    sorted) cut into runs of ``k`` (their count a multiple of ``k``)."""
    distributed = lock.body.request.distributed
    k = 1 if distributed is None else distributed.spread
    if k == 1:
        return [[s] for s in chosen]
    if not allowed:
        raise SpreadRefused(
            systems=k,
            chosen=chosen,
            reason="this server does not spread a training's ranks over agents (their "
            "sandboxes keep the agents' network; its operator allows it with `pinbench serve "
            "--allow-spread`)",
        )
    if named and len(chosen) != k:
        raise SpreadRefused(
            systems=k,
            chosen=chosen,
            reason=f"name exactly {k} systems with --on, rank 0's first (a study runs each "
            "cell on one agent: it does not spread a training's ranks)",
        )
    if len(chosen) % k:
        raise SpreadRefused(
            systems=k,
            chosen=chosen,
            reason=f"--on all found {len(chosen)}, not a multiple of {k}: name the {k} "
            "systems to use with --on",
        )
    return [list(chosen[i : i + k]) for i in range(0, len(chosen), k)]


class PeerFailed(UserError):
    """A system holding some of a spread run's ranks failed or was lost."""

    def __init__(self, *, system: str, reason: str) -> None:
        super().__init__(f"ranks on system {system}: {reason}")
        self.system = system
        self.reason = reason


def rendezvous(
    ray: Any, leader: Any, systems: Sequence[str], lock: Lockfile
) -> list[dict[str, Any]]:
    """Each system's placement as plain data, rank 0's (``leader``'s agent) first."""
    distributed = lock.body.request.distributed
    assert distributed is not None and distributed.spread == len(systems)
    try:
        where = ray.get(leader.rendezvous.remote(), timeout=RENDEZVOUS_S)
        address, port = where["address"], where["port"]
    except Exception as exc:  # Ray's errors, or an answer that is not the expected mapping
        raise PeerFailed(
            system=systems[0], reason=f"named no rendezvous: {type(exc).__name__}"
        ) from None
    node = _node_address(ray, systems[0])
    if address != node:
        raise PeerFailed(
            system=systems[0], reason=f"named {address!r} for rank 0, not its node's {node!r}"
        )
    count = distributed.per_system
    placements = [
        {
            "address": address,
            "port": port,
            "first": i * count,
            "count": count,
            "systems": list(systems),
        }
        for i in range(len(systems))
    ]
    checked: list[RankPlacement] = [parse(p) for p in placements]
    for p in checked:
        p.check(distributed)
    return [msgspec.to_builtins(p) for p in checked]


def _node_address(ray: Any, system: str) -> str | None:
    """The address of ``system``'s live Ray node, as the cluster knows it."""
    from pinbench.cluster.ray_agent import LABEL

    for node in ray.nodes():
        if node.get("Alive") and (node.get("Labels") or {}).get(LABEL) == system:
            return str(node.get("NodeManagerAddress"))
    return None


@dataclass
class Peers:
    """The evaluations of a spread run's other systems, started with ``start``."""

    ray: Any
    systems: Sequence[str]
    tasks: dict[str, tuple[Any, Any, str]] = field(default_factory=dict)
    """System -> (its actor, the evaluation's object ref, its ticket)."""
    answered: set[str] = field(default_factory=set)
    """The systems whose ranks trained (their answer read)."""
    waiting: dict[str, tuple[Any, str]] = field(default_factory=dict)
    """Systems (rank 0's too) whose evaluation has not started yet: (actor, ticket)."""
    deadline: float = 0.0
    """When a system still waiting for its agent makes the run fail (``START_S``)."""

    def start(self, actors: dict[str, Any], args: tuple[Any, ...], placements: list[Any]) -> None:
        """Send each system its share: ``args`` are ``Agent.run``'s up to the ticket."""
        import time
        import uuid

        self.deadline = time.monotonic() + START_S
        for system, placement in zip(self.systems, placements, strict=True):
            ticket = uuid.uuid4().hex
            ref = actors[system].run.remote(*args, False, ticket, placement)
            self.tasks[system] = (actors[system], ref, ticket)
            self.waiting[system] = (actors[system], ticket)

    def leader(self, system: str, actor: Any, ticket: str) -> None:
        """Watch rank 0's system start too (``check``)."""
        self.waiting[system] = (actor, ticket)

    def check(self) -> None:
        """Raise ``PeerFailed`` for a system that answered an error (or is gone) while the
        leader runs: rank 0's wait for its ranks would only time out."""
        for system, (_, ref, _) in self.tasks.items():
            if system not in self.answered and self.ray.wait([ref], timeout=0)[0]:
                self._answer(system, ref)
        self._started()

    def _started(self) -> None:
        """Raise ``PeerFailed`` for a system whose agent is still busy with another
        evaluation ``START_S`` after the run was sent: an agent runs one at a time, and ranks
        waiting there would hold the others (two spread runs crossing would wait on each
        other until their timeout)."""
        import time

        from pinbench.cluster.ray_agent import WAITING

        for system, (actor, ticket) in list(self.waiting.items()):
            try:
                text = self.ray.get(actor.progress.remote(ticket), timeout=PROGRESS_S)
            except Exception:  # Ray's word on a lost system comes with the answer
                continue
            if text != WAITING:
                del self.waiting[system]
            elif time.monotonic() > self.deadline:
                raise PeerFailed(
                    system=system,
                    reason=f"busy with another evaluation for {START_S:.0f} s: a training "
                    "spread over systems needs each of them free at once",
                )

    def finish(self, stop: Stop) -> None:
        """Wait for every system's answer after the leader's success (``PeerFailed``), up
        to ``FINISH_S``, the run's stop watched."""
        import time

        deadline = time.monotonic() + FINISH_S
        for system, (_, ref, _) in self.tasks.items():
            while system not in self.answered and not self.ray.wait([ref], timeout=POLL_S)[0]:
                stop.check()
                if time.monotonic() > deadline:
                    raise PeerFailed(
                        system=system, reason=f"no answer {FINISH_S:.0f} s after rank 0's"
                    )
            if system not in self.answered:
                self._answer(system, ref)

    def cancel(self, reason: str) -> None:
        """Stop every system's evaluation (the run failed, was cancelled or is stopping)."""
        for actor, ref, ticket in self.tasks.values():
            with contextlib.suppress(Exception):
                self.ray.get(actor.cancel.remote(reason, ticket), timeout=CANCEL_S)
            with contextlib.suppress(Exception):
                self.ray.cancel(ref)

    def _answer(self, system: str, ref: Any, timeout: float | None = None) -> None:
        ray = self.ray
        try:
            answer = ray.get(ref, timeout=timeout)
        except lost_errors(ray) as exc:
            raise PeerFailed(system=system, reason=f"lost ({type(exc).__name__})") from None
        except ray.exceptions.RayError as exc:
            raise PeerFailed(system=system, reason=f"Ray: {type(exc).__name__}") from None
        error = read_error(answer)
        if error is not None:
            raise PeerFailed(system=system, reason=printable(error.message))
        self.answered.add(system)
