"""Every plot of a report, in the order the page shows them."""

from __future__ import annotations

from pinbench.reports.charts import (
    Chart,
    accuracy_vs_latency,
    latency_cdf,
    latency_histogram,
    sweep,
)
from pinbench.reports.data import Report
from pinbench.reports.systems_chart import across_systems, spans_systems


def charts(report: Report) -> list[Chart]:
    """Every plot of the report; the one across systems only when its runs ran on more than
    one system (a report of one machine's runs does not mention systems)."""
    out = [
        latency_cdf(report),
        latency_histogram(report),
        sweep(report),
        accuracy_vs_latency(report),
    ]
    if spans_systems(report):
        out.append(across_systems(report))
    return out
