"""A report as plain rows and cells, ready for a template: the HTML report, the Markdown
report and the web UI's pages all draw from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pinbench.energy.show import cost_per_1000, usd
from pinbench.evaluator.records.run_compare import differing
from pinbench.reports.charts import Chart, accuracy_points
from pinbench.reports.data import Report, RunData
from pinbench.reports.diff import DiffRow, HardwareRow, hardware_rows, run_diff
from pinbench.reports.distributed import DistributedRow, distributed_table, scaling_chart
from pinbench.reports.operators import OpTable, operator_table, roofline
from pinbench.reports.report_charts import charts
from pinbench.reports.systems_chart import system_points
from pinbench.reports.training import TrainingRow, training_curves, training_table
from pinbench.reports.transforms import TransformRow, transform_table
from pinbench.run_samples import SampleRows, sample_rows


@dataclass(frozen=True, slots=True)
class MetricRow:
    metric: str
    """How the row is named: words with the key beside (``metric_names.named``)."""
    unit: str
    values: list[str]
    key: str = ""
    """The recorded metric's key (``framework_latency_p50_ns``)."""


@dataclass(frozen=True, slots=True)
class ReportView:
    title: str
    created_at: str
    runs: list[dict[str, str]]
    """Per run: what ran (lockfile summary) and where (environment), as text."""
    metrics: list[MetricRow]
    differs: list[str]
    """Which of model, framework, dataset, scenario, mode, batch size differ between runs."""
    charts: list[Chart]
    diff: list[DiffRow]
    accuracy: list[dict[str, Any]]
    predictions: list[tuple[str, SampleRows]]
    """Per accuracy run with recorded per-sample rows: its label and its first rows, as its
    task recorded them (``samples.sample_rows``)."""
    systems: list[str]
    """The systems the runs ran on (``reports.hardware.system_label``), each once, in order."""
    hardware: list[HardwareRow]
    """Each run's machine: CPU model, cores, memory, GPU model/count, driver, libraries."""
    across_systems: list[dict[str, Any]]
    """``charts.system_points``: one model's figures per system, when runs span systems."""
    operators: OpTable | None = None
    """Operator (L0) runs: spec x framework; None when the report holds none."""
    training: list[TrainingRow] = field(default_factory=list)
    """Training (L2) runs: time to accuracy and the rest, one row each."""
    transforms: list[TransformRow] = field(default_factory=list)
    """Network transformations (L1) validated by runs: one row each."""
    distributed: list[DistributedRow] = field(default_factory=list)
    """Distributed training (L3) runs: scheme, workers, bytes per step, one row each."""

    @property
    def hardware_differs(self) -> list[str]:
        """The hardware facts not the same on every run's machine."""
        return [row.fact for row in self.hardware if row.differs]


COST_ROW = "cost per 1,000 inferences"
"""The metrics row derived from a run's declared price (``details.cost``) and throughput."""


def fmt(value: float | None, unit: str) -> tuple[str, str]:
    """A metric for people: nanoseconds as milliseconds, 4 significant digits, never an
    exponent from 10,000 up (``fmt_sig``)."""
    from pinbench.metric_names import fmt_sig

    if value is None:
        return "", unit
    if unit == "ns":
        return fmt_sig(value / 1e6), "ms"
    if unit == "bool":
        return ("yes" if value else "no"), ""
    if unit == "B":
        return f"{value / 2**20:,.1f}", "MiB"
    if value.is_integer() and abs(value) < 1e15:
        return f"{value:,.0f}", unit
    return fmt_sig(value), unit


UNDEFINED = "undefined"
"""A run's cell for a metric it left out as undefined (its details say why)."""


def metric_table(report: Report) -> list[MetricRow]:
    """One row per metric any run recorded or left out as undefined: the runs' tasks' metrics
    first, in the order their task declares them and named by the task's label beside the key
    (``mAP small (map_small)``), then the rest in words beside their keys
    (``metric_names.named``), nanoseconds in one unit a row. A run's cell is empty where it has no
    such metric, ``undefined`` where it left it out as undefined (decision 165)."""
    from pinbench.metric_names import in_unit, named, ns_unit
    from pinbench.run_metrics import undefined_of
    from pinbench.tasks.base import Metric
    from pinbench.tasks.registry import metric_of, names, task

    units: dict[str, str] = {}
    for run in report.runs:
        units.update(run.info.get("units") or {})
    undefined = [undefined_of(run.info) for run in report.runs]
    tasks = [t for t in dict.fromkeys(run.info.get("task") for run in report.runs) if t in names()]
    order: dict[str, int] = {}
    for name in tasks:
        for m in task(name).metrics:
            order.setdefault(m.name, len(order))
    first = tasks[0] if tasks else None

    def declared_as(key: str) -> Metric | None:
        found = metric_of(key, first) if tasks else None
        return found if found is not None and found.name in order else None

    def placed(key: str) -> tuple[int, str]:
        declared = declared_as(key)
        return (len(order) if declared is None else order[declared.name], key)

    rows = []
    for metric in sorted(set(units).union(*undefined), key=placed):
        unit = units.get(metric, "ratio")
        declared = declared_as(metric)
        shown = named(metric, task=first)
        if declared is not None and declared.label != metric:
            shown = f"{declared.label} ({metric})"
        values = [r.metrics.get(metric) for r in report.runs]
        shown_unit = fmt(0.0, unit)[1]
        if unit == "ns":  # one unit a row, as the CLI prints each value (``metric_names``)
            shown_unit = ns_unit([v for v in values if v is not None])
        cells = []
        for value, gone in zip(values, undefined, strict=True):
            if metric in gone and value is None:
                cells.append(UNDEFINED)
            elif unit == "ns":
                cells.append("" if value is None else in_unit(value, shown_unit))
            else:
                cells.append(fmt(value, unit)[0])
        rows.append(MetricRow(shown, shown_unit, cells, metric))
    return rows


def _artifact(lock: dict[str, Any], kind: str) -> str:
    for a in lock.get("artifacts", []):
        if a["kind"] == kind:
            return f"{a['name']}@{a['version']} ({a['manifest_digest'][:12]})"
    return ""


def run_facts(run: RunData) -> dict[str, str]:
    i = run.info
    lock = i.get("lockfile_body") or {}
    host = i.get("host") or {}
    details = i.get("details") or {}
    env = details.get("environment") or {}
    scenario = lock.get("scenario", {})
    settings = ", ".join(
        f"{k}={scenario[k]}"
        for k in ("min_duration_ms", "min_query_count", "target_qps", "seed")
        if scenario.get(k) is not None
    )
    return {
        "id": run.id,
        "label": run.label,
        "status": i["status"],
        "error": i.get("error") or "",
        "model": _artifact(lock, "model"),
        "framework": _artifact(lock, "framework"),
        "dataset": _artifact(lock, "dataset"),
        "image": _artifact(lock, "image"),
        "scenario": f"{i['scenario']} ({i['mode']})",
        "settings": settings,
        "batch_size": str(i["batch_size"]),
        "threads": "default" if i["threads"] is None else str(i["threads"]),
        "lockfile": i["lockfile"],
        "system": run.system,
        "system_name": str(i.get("system") or ""),
        "runner": i["runner"],
        "trace": run.trace
        + (
            f" (latencies traced; trace sha256 {i['trace_sha256'][:12]})"
            if i.get("trace_sha256")
            else ""
        ),
        "environment": i["environment"] or "",
        "python": str(env.get("python", "")),
        "host": f"{host.get('cpu')}, {host.get('cores')} cores, {host.get('os')}" if host else "",
        "started_at": i["started_at"] or "",
        "finished_at": i["finished_at"] or "",
    }


INFERENCE_ONLY = frozenset({"sweep", "accuracy"})
"""Plots only inference runs can make: left out of a report that holds none."""


def all_charts(report: Report) -> list[Chart]:
    """``charts.charts``, then the roofline when the report holds operator runs and the
    training curves when it holds training runs."""
    levels = {r.level for r in report.runs}
    out = [c for c in charts(report) if "inference" in levels or c.key not in INFERENCE_ONLY]
    if "operator" in levels:
        out.append(roofline(report))
    if "training" in levels:
        out.append(training_curves(report))
        if any(r.info.get("details", {}).get("distributed") for r in report.runs):
            out.append(scaling_chart(report))
    return out


def build(report: Report, title: str | None = None) -> ReportView:
    rows = metric_table(report)
    costs = [cost_per_1000(r.info) for r in report.runs]
    if any(c is not None for c in costs):  # derived: declared price over measured throughput
        shown = ["" if c is None else usd(c).removeprefix("$") for c in costs]
        rows.append(MetricRow(COST_ROW, "USD", shown))
    infos = [r.info for r in report.runs]
    differs = differing(infos)
    return ReportView(
        title=title or f"pinbench report: {len(report.runs)} run(s)",
        created_at=report.created_at,
        runs=[run_facts(r) for r in report.runs],
        metrics=rows,
        differs=differs,
        charts=all_charts(report),
        diff=run_diff(infos) if len(infos) > 1 else [],
        accuracy=accuracy_points(report),
        predictions=[
            (r.label, p) for r in report.runs if (p := sample_rows(r.info.get("details")))
        ],
        systems=list(dict.fromkeys(r.system for r in report.runs)),
        hardware=hardware_rows([r.hardware for r in report.runs]),
        across_systems=system_points(report) if len(report.runs) > 1 else [],
        operators=operator_table(report),
        training=training_table(report),
        transforms=transform_table(report),
        distributed=distributed_table(report),
    )
