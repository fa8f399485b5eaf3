"""Reports over recorded runs: the HTML page, Markdown, or the raw latencies as CSV/Parquet."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, get
from litestar.params import Parameter

from pinbench.accounts import Principal
from pinbench.sdk.hosting import MAX_REPORT_RUNS, Hosting


def report_response(hosted: Hosting, run_ids: list[str], fmt: str) -> Response[bytes]:
    """The report as a download named after its first run (``pinbench-report-1a2b3c4d.html``;
    each format's name is its file extension)."""
    media, body, first = hosted.report(run_ids, fmt)
    name = f"pinbench-report-{first[:8]}.{fmt}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if fmt == "html":  # its inline scripts run by their hashes (the server's policy has none)
        headers["Content-Security-Policy"] = f"{hosted.report_policy()}; frame-ancestors 'none'"
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
        hosted: Hosting,
        principal: Principal,
        run: Annotated[list[str] | None, Parameter(max_items=MAX_REPORT_RUNS)] = None,
        format: Annotated[
            str, Parameter(description="html, md, csv or parquet", max_length=16)
        ] = "html",
    ) -> Response[bytes]:
        principal.require("read")
        return report_response(hosted, run or [], fmt=format)
