"""Where the server's runs may go beyond itself: its Ray cluster (``serve --cluster``), refused
when it has none, the systems a lost run may be retried on, and whose a run is (a retry is
its submitter's to cancel too)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pinbench.errors import PinbenchError, UserError
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.api.runs")


def other_systems(
    lost: str, lock: Lockfile, address: str, tried: list[str], named: list[str] | None
) -> list[str]:
    """The live systems of the cluster at ``address`` that meet the lockfile, but those
    ``tried`` (and only those ``named``, when the caller named systems): where run ``lost``
    may be retried. None found, or the cluster not answering, is said in the log."""
    from pinbench.cluster.placement import Candidate, choose_for
    from pinbench.cluster.ray_agent import cluster_systems

    try:
        found = cluster_systems(address)
        candidates = [Candidate(c.name, c.facts or {}, c.alive) for c in found]
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
    and the token (``read`` scope) agents download blobs with."""

    address: str
    agent_url: str
    token: str = field(repr=False)


class NoCluster(UserError):
    def __init__(self) -> None:
        super().__init__(
            "this server has no cluster: runs placed on systems need `pinbench serve --cluster`"
        )
