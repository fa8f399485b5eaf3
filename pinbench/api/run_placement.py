"""Where the server's runs may go beyond itself: its Ray cluster (``serve --cluster``), refused
when it has none, the systems a run may be placed on, and whose a run is (a retry is its
submitter's to cancel too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.cluster.placement import Candidate


def submitter(ws: Workspace, run_id: str) -> str | None:
    """Who submitted a run (its retries are theirs to cancel too)."""
    from pinbench.db.models import Run

    with ws.transaction() as session:
        row = session.get(Run, run_id)
        return row.submitted_by if row is not None else None


@dataclass(frozen=True)
class Cluster:
    """``serve --cluster``: the Ray cluster's address, this server's URL as agents reach it,
    and the token (``read`` scope) agents download blobs with."""

    address: str
    agent_url: str
    token: str = field(repr=False)


class NoCluster(UserError):
    def __init__(self) -> None:
        super().__init__(
            "this server has no cluster: runs placed on systems need `pinbench serve --cluster`"
        )


def cluster_candidates(
    ws: Workspace, address: str, facts: dict[tuple[str, str], dict[str, Any]]
) -> list[Candidate]:
    """The cluster's systems as placement candidates; each system's facts, asked once (kept in
    ``facts`` by name and Ray node id), are recorded when first seen."""
    from pinbench.cluster.placement import Candidate
    from pinbench.cluster.ray_agent import cluster_systems
    from pinbench.cluster.systems import record

    candidates = []
    for found in cluster_systems(address, facts):
        key = (found.name, found.node_id or "")
        if found.facts is not None and key not in facts:
            record(ws, found.name, found.facts, found.node_id)
            facts[key] = found.facts
        candidates.append(Candidate(found.name, found.facts or {}, found.alive))
    return candidates
