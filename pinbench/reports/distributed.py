"""Distributed training (L3) runs in a report: a table of scheme, workers, communication
volume, throughput and time to accuracy, and a scaling plot (throughput and time to accuracy
against workers, one line per scheme, DDP beside the others).

Read from what the run recorded (``details["distributed"]``, its metrics and
``details["training"]``; docs/levels.md, "Distributed training (L3)"). A run whose target was
not reached has no time to accuracy: it is left out of that panel, and its row says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.reports.charts import HEIGHT, LEGEND, SCHEMA, WIDTH, Chart
from pinbench.reports.data import Report, RunData

SCALING = (
    ("throughput_sps", "samples/s (all workers)"),
    ("throughput_sps_per_worker", "samples/s per worker"),
    ("time_to_accuracy_s", "time to accuracy (s)"),
)
"""The measures drawn against workers, each in its own panel: (metric, axis title)."""


def distributed_of(run: RunData) -> dict[str, Any] | None:
    """``details["distributed"]``: scheme, workers, bytes per step, throughput per worker."""
    found = (run.info.get("details") or {}).get("distributed")
    return found if isinstance(found, dict) else None


def _num(value: Any, digits: str | None = None) -> str:
    """``value`` in ``digits`` (a format spec), else by the figure rule (``fmt_sig``)."""
    from pinbench.metric_names import fmt_sig

    if value is None:
        return ""
    return fmt_sig(float(value)) if digits is None else format(float(value), digits)


@dataclass(frozen=True, slots=True)
class DistributedRow:
    run_id: str
    scheme: str
    workers: str
    global_batch: str
    bytes_per_step: str
    """Payload bytes one worker hands to collectives per step (the scheme's accounting)."""
    step_ms: str
    collective_share: str
    """The share of the ranks' training time inside the scheme's collectives (``12.5%``);
    empty for ``ddp``, whose are overlapped with its backward pass."""
    systems: str
    """The cluster systems the ranks were spread over, rank 0's first; ``one`` else."""
    samples_per_s_per_worker: str
    time_to_accuracy_s: str
    """Seconds, or ``not reached after N epochs`` (or ``no target``)."""
    weights: str


def distributed_row(run: RunData, record: dict[str, Any]) -> DistributedRow:
    metrics = run.metrics
    training = (run.info.get("details") or {}).get("training") or {}
    epochs = training.get("epochs") or []
    if training.get("target_top1") is None:
        tta = "no target"
    elif training.get("reached_epoch") is None:
        tta = f"not reached after {len(epochs)} epochs"
    else:
        tta = _num(metrics.get("time_to_accuracy_s"))
    step, share = record.get("step_time_s"), record.get("collective_share")
    return DistributedRow(
        run_id=run.id,
        scheme=str(record.get("scheme") or ""),
        workers=str(record.get("workers") or ""),
        global_batch=str(record.get("global_batch_size") or ""),
        bytes_per_step=_num(record.get("bytes_per_step"), ",.0f"),
        step_ms=_num(None if step is None else float(step) * 1e3),
        collective_share="" if share is None else f"{float(share) * 100:.1f}%",
        systems=", ".join(str(s) for s in record.get("systems") or []) or "one",
        samples_per_s_per_worker=_num(metrics.get("throughput_sps_per_worker")),
        time_to_accuracy_s=tta,
        weights=str(training.get("weights_sha256") or "")[:12],
    )


def distributed_table(report: Report) -> list[DistributedRow]:
    """A row per distributed run, by scheme then workers; empty when it holds none."""
    rows = [distributed_row(r, d) for r in report.runs if (d := distributed_of(r)) is not None]
    return sorted(rows, key=lambda row: (row.scheme, int(row.workers or 0)))


def scaling_points(report: Report) -> list[dict[str, Any]]:
    """One point per distributed run and measure: scheme, workers, value."""
    return [
        {
            "scheme": str(record.get("scheme")),
            "workers": int(record.get("workers") or 0),
            "measure": title,
            "value": float(value),
            "run": run.id[:8],
        }
        for run in report.runs
        if (record := distributed_of(run)) is not None
        for metric, title in SCALING
        if (value := run.metrics.get(metric)) is not None
    ]


def scaling_chart(report: Report) -> Chart:
    """Throughput (all workers, per worker) and time to accuracy against workers, a line per
    scheme (DDP, the native baseline, among them)."""
    title = "Distributed training: throughput and time to accuracy against workers, per scheme"
    rows = scaling_points(report)
    if not rows:
        return Chart("distributed", title, None, "no distributed run here recorded a measure")
    panels = [
        {
            "width": WIDTH,
            "height": HEIGHT // 3,
            "transform": [{"filter": {"field": "measure", "equal": name}}],
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": {"field": "workers", "type": "quantitative", "title": "workers"},
                "y": {
                    "field": "value",
                    "type": "quantitative",
                    "title": name,
                    "aggregate": "median",
                },
                "color": {"field": "scheme", "type": "nominal", "legend": LEGEND},
                "tooltip": [
                    {"field": "scheme"},
                    {"field": "workers"},
                    {"field": "value", "aggregate": "median"},
                ],
            },
        }
        for _, name in SCALING
    ]
    spec = {"$schema": SCHEMA, "title": title, "data": {"values": rows}, "vconcat": panels}
    return Chart("distributed", title, spec)
