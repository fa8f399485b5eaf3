"""Systems: the cluster's agents and their hardware, as recorded (alive: Ray's answer, when
this server has a cluster)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get

from pinbench.accounts import Principal
from pinbench.api.runpool import RunPool
from pinbench.workspace import Workspace


def alive_systems(ws: Workspace, pool: RunPool) -> dict[str, bool] | None:
    """Ray's answer on each system (facts refreshed in the table); None: no cluster here."""
    if pool.cluster is None:
        return None
    from pinbench.cluster.ray_agent import cluster_systems
    from pinbench.cluster.systems import record

    alive = {}
    for found in cluster_systems(pool.cluster.address):
        alive[found.name] = found.alive
        if found.facts is not None:
            record(ws, found.name, found.facts, found.node_id)
    return alive


class SystemController(Controller):
    path = "/api/v1/systems"
    tags = ["systems"]  # noqa: RUF012

    @get("/", sync_to_thread=True, summary="Every system: hardware facts, alive, runs done")
    def list_systems(
        self, ws: Workspace, pool: RunPool, principal: Principal
    ) -> list[dict[str, Any]]:
        from pinbench.cluster.systems import list_systems

        principal.require("read")
        return [row.to_json() for row in list_systems(ws, alive_systems(ws, pool))]

    @get("/{name:str}", sync_to_thread=True, summary="One system's facts as its agent reported")
    def show(self, ws: Workspace, pool: RunPool, principal: Principal, name: str) -> dict[str, Any]:
        from pinbench.cluster.systems import show_system

        principal.require("read")
        return show_system(ws, name, alive_systems(ws, pool)).to_json()
