"""Training (L2) runs in a report: per-epoch curves (validation top-1 and training loss) and a
time-to-accuracy comparison table.

Read from what the run recorded (``details["training"]`` and its metrics, the contract of
issue 22). Time to accuracy follows MLPerf Training: wall time from the first training step
to reaching the target on validation, evaluation time excluded (and shown beside it). A run
whose target was not reached says "not reached after N epochs", never a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.reports.charts import HEIGHT, LEGEND, SCHEMA, WIDTH, Chart
from pinbench.reports.data import Report, RunData

CURVES = (("val_top1", "validation top-1"), ("train_loss", "training loss"))
"""The per-epoch measures drawn, each in its own panel: (field, axis title)."""


def training_of(run: RunData) -> dict[str, Any] | None:
    """``details["training"]``: framework, epochs, target, reached epoch, weights digest."""
    found = (run.info.get("details") or {}).get("training")
    return found if isinstance(found, dict) else None


def framework_of(run: RunData, training: dict[str, Any]) -> str:
    return str(training.get("framework") or (run.info.get("framework") or "").split("@")[0])


def curve_label(run: RunData, training: dict[str, Any]) -> str:
    return f"{framework_of(run, training)} {run.id[:8]}"


def _num(value: Any, digits: str | None = None) -> str:
    """``value`` in ``digits`` (a format spec), else in four significant digits (``fmt_sig``)."""
    from pinbench.metric_names import fmt_sig

    if value is None:
        return ""
    return fmt_sig(float(value)) if digits is None else format(float(value), digits)


@dataclass(frozen=True, slots=True)
class TrainingRow:
    run_id: str
    framework: str
    target: str
    reached: str
    """The epoch the target was reached at, or ``not reached after N epochs``."""
    time_to_accuracy_s: str
    """Seconds, or ``not reached after N epochs`` (or ``no target``)."""
    eval_s: str
    """Evaluation time, excluded from time to accuracy."""
    samples_per_s: str
    final_top1: str
    weights: str
    """The final weights' sha256, first 12 hex digits."""


def training_row(run: RunData, training: dict[str, Any]) -> TrainingRow:
    metrics = run.metrics
    epochs = training.get("epochs") or []
    target = training.get("target_top1")
    reached = training.get("reached_epoch")
    if target is None:
        reached_text = tta = "no target"
    elif reached is None:
        reached_text = tta = f"not reached after {len(epochs)} epochs"
    else:
        reached_text = str(reached)
        tta = _num(metrics.get("time_to_accuracy_s"))
    final = metrics.get("final_top1")
    if final is None and epochs:
        final = epochs[-1].get("val_top1")
    return TrainingRow(
        run_id=run.id,
        framework=framework_of(run, training),
        target="none" if target is None else _num(target),
        reached=reached_text,
        time_to_accuracy_s=tta,
        eval_s=_num(metrics.get("eval_time_s")),
        samples_per_s=_num(metrics.get("throughput_sps")),
        final_top1=_num(final, ".4f"),
        weights=str(training.get("weights_sha256") or "")[:12],
    )


def training_table(report: Report) -> list[TrainingRow]:
    """A row per training run, in the report's order; empty when it holds none."""
    return [training_row(r, t) for r in report.runs if (t := training_of(r)) is not None]


def training_curves(report: Report) -> Chart:
    """Validation top-1 and training loss per epoch, one line per run (framework + run id)."""
    title = "Training curves: validation top-1 and training loss per epoch"
    rows = [
        {"run": curve_label(run, training), "epoch": e["epoch"], "measure": field, "value": value}
        for run in report.runs
        if (training := training_of(run)) is not None
        for e in training.get("epochs") or []
        for field, _ in CURVES
        if (value := e.get(field)) is not None
    ]
    if not rows:
        return Chart("training", title, None, "no training run here recorded an epoch")
    panels = [
        {
            "width": WIDTH,
            "height": HEIGHT // 2,
            "transform": [{"filter": {"field": "measure", "equal": field}}],
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": {"field": "epoch", "type": "quantitative", "title": "epoch"},
                "y": {
                    "field": "value",
                    "type": "quantitative",
                    "title": name,
                    "scale": {"zero": False},
                },
                "color": {"field": "run", "type": "nominal", "legend": LEGEND},
                "tooltip": [{"field": "run"}, {"field": "epoch"}, {"field": "value"}],
            },
        }
        for field, name in CURVES
    ]
    spec = {"$schema": SCHEMA, "title": title, "data": {"values": rows}, "vconcat": panels}
    return Chart("training", title, spec)
