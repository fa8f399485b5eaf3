"""The benchmark table: one row per (framework, model) with its accuracy and both scenarios'
latency or throughput; as Markdown and JSON, and the accuracy alone (the deterministic part)
as the pipeline's metrics. Accuracy is what the accuracy run's task says (``pinbench.tasks``):
the metrics a rerun must reproduce, and its headline metric in the table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from pinbench.benchmark.jobs import Job
from pinbench.metric_names import fmt_rate
from pinbench.run_figures import INVALID, fmt_ns, loadgen_invalid


@dataclass(frozen=True, slots=True)
class Row:
    framework: str
    framework_version: str
    """As the runs' host facts saw it ("" when unknown)."""
    model: str
    """The model as the job names it (a range of ``^1`` left out)."""
    resolved: str
    """The model's exact ``name@version`` its runs ran."""
    task: str | None
    """The accuracy run's task (None for a model without an accuracy run)."""
    accuracy: dict[str, float]
    """The accuracy run's metrics a rerun must reproduce exactly (its task's ``exact``
    metrics: ``registry.exact_metrics``), in the task's order; empty without one."""
    headline: str | None
    """The task's headline metric (lists show it: ``registry.headline``), one of ``accuracy``."""
    samples: int | None
    """Samples the accuracy run answered (its ``samples_count``); None without one."""
    latency_p50_ns: float | None
    latency_p99_ns: float | None
    """LoadGen's, of the SingleStream run."""
    throughput_sps: float | None
    """LoadGen's samples per second, of the Offline run."""
    invalid: tuple[str, ...] = ()
    """The performance scenarios whose run LoadGen called INVALID: their figures are marked."""
    invalid_why: tuple[str, ...] = ()
    """Why, as the runs record LoadGen's reasons: ``SingleStream: min_duration not met: ...``
    (``invalid_notes`` prints them under the table)."""

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
                **_scored(acc),
                latency_p50_ns=ss.get("latency_p50_ns"),
                latency_p99_ns=ss.get("latency_p99_ns"),
                throughput_sps=off.get("throughput_sps"),
                invalid=tuple(
                    name
                    for name, run in (("SingleStream", ss), ("Offline", off))
                    if loadgen_invalid(run)
                ),
                invalid_why=tuple(
                    f"{name}: {reason}"
                    for name, run in (("SingleStream", ss), ("Offline", off))
                    if loadgen_invalid(run)
                    for reason in _reasons(run)
                ),
            )
        )
    return out


def _reasons(run: dict[str, Any]) -> list[str]:
    """LoadGen's reasons for calling ``run`` INVALID, as the run records them."""
    loadgen = (run.get("details") or {}).get("loadgen") or {}
    found = loadgen.get("invalid_reasons") if isinstance(loadgen, dict) else None
    return [str(r) for r in found] if isinstance(found, list) and found else ["no reason logged"]


def invalid_notes(table: list[Row]) -> list[str]:
    """A line under the table for each figure marked INVALID: whose, which scenario, and
    LoadGen's reason with the setting that governs it (issue 72: the demo's first screen
    showed INVALID with no word of why)."""
    return [f"{INVALID}: {r.framework} {r.model} {why}" for r in table for why in r.invalid_why]


def _scored(run: dict[str, Any]) -> dict[str, Any]:
    """A row's accuracy fields from its accuracy run, as the run's task names them (empty
    where there is no such run, or it recorded no headline metric of its task)."""
    from pinbench.tasks.registry import exact_metrics, headline

    task = ((run.get("lockfile_body") or {}).get("dataset") or {}).get("task")
    metrics = {k: run[k] for k in run.get("units") or {} if k in run}
    found = headline(metrics, task)
    if found is None:
        return {"task": None, "accuracy": {}, "headline": None, "samples": None}
    samples = metrics.get("samples_count")
    return {
        "task": found[0].name,
        "accuracy": {k: float(metrics[k]) for k in exact_metrics(metrics, found[0].name)},
        "headline": found[1].name,
        "samples": None if samples is None else int(samples),
    }


def accuracy_cell(row: Row) -> str:
    """The headline metric as its task shows it (``top-1 0.9867``), and the samples."""
    from pinbench.tasks.registry import task

    if row.task is None or row.headline is None:
        return "perf only"
    metric = task(row.task).metric(row.headline)
    assert metric is not None  # the task's headline
    samples = "" if row.samples is None else f" ({row.samples} samples)"
    return f"{metric.label} {metric.show(row.accuracy[row.headline])}{samples}"


def latency_cell(row: Row, ns: float | None) -> str:
    """A SingleStream latency as the CLI shows one, marked when its run is INVALID."""
    if ns is None:
        return ""
    return f"{fmt_ns(ns)} {INVALID}" if "SingleStream" in row.invalid else fmt_ns(ns)


def throughput_cell(row: Row) -> str:
    if row.throughput_sps is None:
        return ""
    shown = f"{fmt_rate(row.throughput_sps)} samples/s"
    return f"{shown} {INVALID}" if "Offline" in row.invalid else shown


HEADER = (
    "framework", "model", "accuracy", "SingleStream p50 (LoadGen)", "p99 (LoadGen)",
    "Offline (LoadGen)",
)  # fmt: skip


def cells(row: Row) -> tuple[str, ...]:
    """The row as the demo prints it and the Markdown table writes it."""
    return (
        f"{row.framework} {row.framework_version}".strip(),
        row.model,
        accuracy_cell(row),
        latency_cell(row, row.latency_p50_ns),
        latency_cell(row, row.latency_p99_ns),
        throughput_cell(row),
    )


def markdown(table: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in table]
    notes = invalid_notes(table)
    lines += ["", *(f"- {note}" for note in notes)] if notes else []
    return "\n".join(lines) + "\n"


def accuracy(table: list[Row]) -> dict[str, dict[str, dict[str, float | int]]]:
    """framework -> model -> the exact metrics of the accuracy run's task and ``samples``:
    what a rebuilt catalog must reproduce exactly (latencies are left out: they are measured,
    not reproduced)."""
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for r in table:
        if r.accuracy and r.samples is not None:
            metrics: dict[str, float | int] = {**r.accuracy, "samples": r.samples}
            out.setdefault(r.framework, {})[r.resolved] = metrics
    return out
