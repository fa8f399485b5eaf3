"""Studies (``Registry.studies()``): listed, shown as their matrix and reported, with the
``read`` scope; a study on this server's cluster's agents run here (``POST``, the ``run``
scope: ``api.study_runs``). A study of a machine's configurations runs on a local registry
(``pinbench study run``); the server shows what was recorded, or a built-in study's plan, and
never opens a file a caller names."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get, post

from pinbench.accounts import Principal
from pinbench.api.paging import DEFAULT_LIMIT, After, Limit, described, page_listed
from pinbench.api.schemas import StudyRunRequest
from pinbench.api.study_runs import Drivers
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.registry import Registry


class StudyController(Controller):
    path = "/api/v1/studies"
    tags = ["studies"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="Recorded studies, newest first",
        description=described("studies", "name"),
        operation_id="listStudies",
    )
    def list_studies(
        self,
        registry: Registry,
        principal: Principal,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[dict[str, Any]]:
        principal.require("read")
        studies = registry.studies().list()
        return page_listed(studies, id_of=lambda s: str(s["name"]), limit=limit, after=after)

    @post(
        "/",
        sync_to_thread=True,
        status_code=202,
        summary="Run a study on this server's cluster's agents",
        description="Needs the `run` scope and a server started with `--cluster`. The study "
        "(as a study file holds it, every system naming an `agent`) is checked, recorded with "
        "its cells, and run here: each agent's cells in turn, the agents in parallel, each cell "
        "one run queued as POST /api/v1/runs/on queues it (the server's policies and per-user "
        "cap apply). Cells done before are not run again. Follow it with GET "
        "/api/v1/studies/{name} (`active` is true while this server runs it).",
        operation_id="runStudy",
    )
    def run(
        self, registry: Registry, studies: Drivers, principal: Principal, data: StudyRunRequest
    ) -> dict[str, Any]:
        principal.require("run")
        study = registry.studies().parse(data.definition, source=data.source)
        return studies.start(study, data.source, principal)

    @get(
        "/{name:str}",
        sync_to_thread=True,
        summary="One study's matrix: every cell's state, lockfile, run and figures",
        description="`active`: whether a process (this server, a `study run`) runs it now.",
        operation_id="showStudy",
    )
    def show(self, registry: Registry, principal: Principal, name: str) -> dict[str, Any]:
        principal.require("read")
        return registry.studies().show(name, files=False)

    @get(
        "/{name:str}/report",
        sync_to_thread=True,
        summary="One study's analyses as a self-contained HTML page",
        operation_id="reportStudy",
        media_type="text/html",
    )
    def report(
        self, registry: Registry, hosted: Hosting, principal: Principal, name: str
    ) -> Response[bytes]:
        principal.require("read")
        page = registry.studies().report(name, files=False)
        headers = {
            "Content-Disposition": f'attachment; filename="pinbench-study-{name[:63]}.html"',
            "Content-Security-Policy": f"{hosted.report_policy()}; frame-ancestors 'none'",
        }
        return Response(page, media_type="text/html", headers=headers)
