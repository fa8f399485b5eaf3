"""Systems: the cluster's agents and their hardware, as recorded (alive: Ray's answer, when
this server has a cluster)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get

from pinbench.accounts import Principal
from pinbench.api.paging import DEFAULT_LIMIT, After, Limit, described, page_listed
from pinbench.api.runpool import RunPool
from pinbench.sdk.hosting import Hosting


def alive_systems(hosted: Hosting, pool: RunPool) -> dict[str, bool] | None:
    """Ray's answer on each system (facts refreshed in the table); None: no cluster here."""
    if pool.cluster is None:
        return None
    return hosted.refresh_systems(pool.cluster.address)


class SystemController(Controller):
    path = "/api/v1/systems"
    tags = ["systems"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="Systems: hardware facts, alive, runs done",
        description=described("systems", "name"),
    )
    def list_systems(
        self,
        hosted: Hosting,
        pool: RunPool,
        principal: Principal,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[dict[str, Any]]:
        principal.require("read")
        systems = hosted.systems(alive_systems(hosted, pool))
        return page_listed(systems, id_of=lambda s: str(s["name"]), limit=limit, after=after)

    @get("/{name:str}", sync_to_thread=True, summary="One system's facts as its agent reported")
    def show(
        self, hosted: Hosting, pool: RunPool, principal: Principal, name: str
    ) -> dict[str, Any]:
        principal.require("read")
        return hosted.system(name, alive_systems(hosted, pool))
