"""Reports over recorded runs: HTML (self-contained, with Vega-Lite plots), Markdown, and
raw per-query results as CSV or Parquet."""

from __future__ import annotations

from collections.abc import Callable

from pinbench.errors import UserError
from pinbench.reports.data import Report, gather
from pinbench.reports.export import csv_bytes, parquet_bytes
from pinbench.reports.render import html, markdown

FORMATS: dict[str, tuple[str, Callable[[Report], bytes]]] = {
    "html": ("text/html", lambda r: html(r).encode()),
    "md": ("text/markdown", lambda r: markdown(r).encode()),
    "csv": ("text/csv", csv_bytes),
    "parquet": ("application/vnd.apache.parquet", parquet_bytes),
}


class UnknownFormat(UserError):
    def __init__(self, *, fmt: str) -> None:
        super().__init__(f"unknown report format {fmt!r}: one of {', '.join(FORMATS)}")
        self.fmt = fmt


def renderer(fmt: str) -> tuple[str, Callable[[Report], bytes]]:
    """(media type, maker) of ``fmt`` (html, md, csv, parquet): asked before the runs are
    gathered, so an unknown format costs no work."""
    if fmt not in FORMATS:
        raise UnknownFormat(fmt=fmt)
    return FORMATS[fmt]


def render(report: Report, fmt: str) -> tuple[str, bytes]:
    """(media type, bytes) of ``report`` as ``fmt``."""
    media, make = renderer(fmt)
    return media, make(report)


__all__ = ["FORMATS", "Report", "UnknownFormat", "gather", "render", "renderer"]
