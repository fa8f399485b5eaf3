"""Reports over recorded runs: the HTML page, Markdown, or the raw latencies as CSV/Parquet."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, get
from litestar.params import Parameter

from pinbench import reports
from pinbench.accounts import Principal
from pinbench.reports.render import policy
from pinbench.workspace import Workspace


def report_response(ws: Workspace, run_ids: list[str], fmt: str) -> Response[bytes]:
    """The report as a download named after its first run (``pinbench-report-1a2b3c4d.html``;
    each format's name is its file extension)."""
    media, make = reports.renderer(fmt)
    report = reports.gather(ws, run_ids)
    body = make(report)
    name = f"pinbench-report-{report.ids[0][:8]}.{fmt}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if fmt == "html":  # its inline scripts run by their hashes (the server's policy has none)
        headers["Content-Security-Policy"] = f"{policy()}; frame-ancestors 'none'"
    return Response(body, media_type=media, headers=headers)


class ReportController(Controller):
    path = "/api/v1/reports"
    tags = ["runs"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="A report over runs: html, md, csv or parquet",
        description="`html`: a self-contained page (plots inlined, opens with no network); "
        "`md`: Markdown tables; `csv` / `parquet`: one row per query with its latency.",
        media_type="application/octet-stream",
    )
    def report(
        self,
        ws: Workspace,
        principal: Principal,
        run: Annotated[list[str] | None, Parameter(max_items=reports.data.MAX_RUNS)] = None,
        format: Annotated[
            str, Parameter(description="html, md, csv or parquet", max_length=16)
        ] = "html",
    ) -> Response[bytes]:
        principal.require("read")
        return report_response(ws, run or [], fmt=format)
