"""Studies (``Registry.studies()``): listed, shown as their matrix and reported, with the
``read`` scope. A study runs where its runs are recorded, on a local registry (``pinbench
study run``); the server shows what was recorded, or a built-in study's plan, and never opens
a file a caller names."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get

from pinbench.accounts import Principal
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.registry import Registry


class StudyController(Controller):
    path = "/api/v1/studies"
    tags = ["studies"]  # noqa: RUF012

    @get("/", sync_to_thread=True, summary="Every study", operation_id="listStudies")
    def list_studies(self, registry: Registry, principal: Principal) -> list[dict[str, Any]]:
        principal.require("read")
        return registry.studies().list()

    @get(
        "/{name:str}",
        sync_to_thread=True,
        summary="One study's matrix: every cell's state, lockfile, run and figures",
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
