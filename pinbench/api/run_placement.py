"""Where the server's runs may go beyond itself: its Ray cluster (``serve --cluster``), refused
when it has none, and whose a run is (a retry is its submitter's to cancel too)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pinbench.errors import UserError
from pinbench.workspace import Workspace


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
