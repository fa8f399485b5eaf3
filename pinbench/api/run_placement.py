"""Where the server's runs may go beyond itself: its Ray cluster (``serve --cluster``), refused
when it has none, its systems (those a run may go to, those a lost run may be retried on),
and whose a run is (a retry is its submitter's to cancel too)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pinbench.errors import PinbenchError, UserError
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.cluster.dispatch import OnSystem
    from pinbench.cluster.placement import Candidate
    from pinbench.registry.lockfile import Lockfile

log = logging.getLogger("pinbench.api.runs")


def systems_of(
    ws: Workspace, address: str, facts: dict[tuple[str, str], dict[str, Any]]
) -> list[Candidate]:
    """The cluster's systems as placement candidates; each system's facts (by name and Ray
    node id) recorded the first time they are seen, and kept in ``facts``."""
    from pinbench.cluster.placement import Candidate
    from pinbench.cluster.ray_agent import cluster_systems
    from pinbench.cluster.systems import record

    candidates = []
    for found in cluster_systems(address, facts):
        key = (found.name, found.node_id or "")
        if found.facts is not None and key not in facts:
            record(ws, found.name, found.facts, found.node_id)
            facts[key] = found.facts
        # a node whose agent does not answer yet (starting, or its actor died) is not there
        alive = found.alive and found.facts is not None
        candidates.append(Candidate(found.name, found.facts or {}, alive))
    return candidates


def other_systems(
    address: str, lock: Lockfile, lost: str, tried: list[str], named: list[str] | None
) -> list[str]:
    """The live systems a lost run ``lost`` may be retried on: they meet its placement, were
    not ``tried``, and are among ``named`` when its caller named systems (each reason for
    none is logged)."""
    from pinbench.cluster.placement import Candidate, choose_for
    from pinbench.cluster.ray_agent import cluster_systems

    try:
        found = cluster_systems(address)
        candidates = [
            Candidate(c.name, c.facts or {}, c.alive and c.facts is not None) for c in found
        ]
        meets = choose_for(lock.body, candidates, None)
    except PinbenchError as exc:
        log.info("run %s: no retry: %s", lost[:8], exc)
        return []
    left = [s for s in meets if s not in tried and (named is None or s in named)]
    if not left:
        log.info("run %s: no other system meets it: no retry", lost[:8])
    return left


def submitter(ws: Workspace, run_id: str) -> str | None:
    """Who submitted a run (its retries are theirs to cancel too)."""
    from pinbench.db.models import Run

    with ws.transaction() as session:
        row = session.get(Run, run_id)
        return row.submitted_by if row is not None else None


@dataclass(frozen=True)
class Cluster:
    """``serve --cluster``: the Ray cluster's address, this server's URL as agents reach it,
    and the token (``read`` scope) agents download blobs with; whether the operator lets a
    training spread its ranks over agents."""

    address: str
    agent_url: str
    token: str = field(repr=False)
    spread: bool = False
    """``serve --allow-spread``: a training's ranks may be spread over agents."""

    def on(self, system: str, peers: Sequence[str], allowed: tuple[str, ...]) -> OnSystem:
        """Where a run on ``system`` goes (with a spread training's other systems, ``peers``),
        its agent choosing among the ``allowed`` runners."""
        from pinbench.cluster.dispatch import OnSystem

        where = (self.address, system, self.agent_url, self.token)
        return OnSystem(*where, allowed=allowed, peers=tuple(peers))


class NoCluster(UserError):
    def __init__(self) -> None:
        super().__init__(
            "this server has no cluster: runs placed on systems need `pinbench serve --cluster`"
        )
