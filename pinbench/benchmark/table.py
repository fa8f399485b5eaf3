"""The benchmark table: one row per (framework, model) with its accuracy and both scenarios'
latency or throughput; as Markdown and JSON, and the accuracy alone (the deterministic part)
as the pipeline's metrics."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from pinbench.benchmark.jobs import Job


@dataclass(frozen=True, slots=True)
class Row:
    framework: str
    framework_version: str
    """As the runs' host facts saw it ("" when unknown)."""
    model: str
    """The model as the job names it (a range of ``^1`` left out)."""
    resolved: str
    """The model's exact ``name@version`` its runs ran."""
    top1: float | None
    top5: float | None
    samples: int | None
    """Accuracy samples; None for a model without an accuracy run."""
    latency_p50_ns: float | None
    latency_p99_ns: float | None
    throughput_sps: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def rows(runs: Iterable[tuple[Job, dict[str, Any]]]) -> list[Row]:
    """Rows in the order their (framework, model) first appears; ``runs`` pairs each job with
    its run (``show_run``'s shape)."""
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for job, info in runs:
        by.setdefault((job.framework, job.label), {})[job.scenario] = info
    out = []
    for (framework, model), scenarios in by.items():
        acc, ss, off = (scenarios.get(s, {}) for s in ("accuracy", "SingleStream", "Offline"))
        seen = next((s for s in (ss, acc, off) if s), {})
        version = seen.get("host", {}).get("frameworks", {}).get(framework, "")
        out.append(
            Row(
                framework=framework,
                framework_version=version,
                model=model,
                resolved=seen.get("model", model),
                top1=acc.get("top1"),
                top5=acc.get("top5"),
                samples=int(acc["accuracy_samples_count"]) if "top1" in acc else None,
                latency_p50_ns=ss.get("latency_p50_ns"),
                latency_p99_ns=ss.get("latency_p99_ns"),
                throughput_sps=off.get("throughput_sps"),
            )
        )
    return out


def top1_cell(row: Row) -> str:
    if row.top1 is None or row.samples is None:
        return "perf only"
    return f"{row.top1:.4f} ({row.top1 * row.samples:.0f}/{row.samples})"


def us(ns: float | None) -> str:
    if ns is None:
        return ""
    return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} µs"


def throughput_cell(row: Row) -> str:
    return "" if row.throughput_sps is None else f"{row.throughput_sps:,.0f} samples/s"


HEADER = ("framework", "model", "top-1", "SingleStream p50", "p99", "Offline")


def cells(row: Row) -> tuple[str, ...]:
    """The row as the demo prints it and the Markdown table writes it."""
    return (
        f"{row.framework} {row.framework_version}".strip(),
        row.model,
        top1_cell(row),
        us(row.latency_p50_ns),
        us(row.latency_p99_ns),
        throughput_cell(row),
    )


def markdown(table: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in table]
    return "\n".join(lines) + "\n"


def accuracy(table: list[Row]) -> dict[str, dict[str, dict[str, float | int]]]:
    """framework -> model -> top1, top5, samples: what a rebuilt catalog must reproduce
    exactly (latencies are left out: they are measured, not reproduced)."""
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for r in table:
        if r.top1 is not None and r.samples is not None:
            metrics: dict[str, float | int] = {"top1": r.top1, "samples": r.samples}
            if r.top5 is not None:
                metrics["top5"] = r.top5
            out.setdefault(r.framework, {})[r.resolved] = metrics
    return out
