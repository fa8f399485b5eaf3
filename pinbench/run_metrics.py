"""What the CLI and the web UI show of a run's metrics: every metric it recorded, by its task's
label where the task declares it (``pinbench.tasks.metrics``: no task is imported), else by
its key; the task's headline metric for lists; what kind of run it was; and, for lists, why it
failed in short.

A run here is as ``history`` gives it: its metrics flat (``list_runs``/``show_run``) or under
``metrics`` (``nested=True``, the API's shape), ``units`` by metric when it is one run, and its
``kind`` and ``task``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

COMPARED = ("model", "framework", "dataset", "scenario", "mode", "batch_size", "trace")
"""Inputs of a run named when they differ; ``trace`` because a traced run's latencies carry
its profilers' overhead."""


def kind_label(run: Mapping[str, Any]) -> str:
    """``training`` (a distributed one with its scheme: ``training (allreduce, 2 workers)``),
    ``operator``, or an inference run's scenario and mode (``SingleStream performance``)."""
    kind = run.get("kind") or "inference"
    if kind != "inference":
        scheme = distributed_label(run)
        return f"{kind} ({scheme})" if scheme else str(kind)
    return f"{run.get('scenario')} {run.get('mode')}"


REASON_CHARS = 160
"""The most of a run's reason (its ``error``) a list shows; the run's page shows it whole."""


def short_reason(error: str, limit: int = REASON_CHARS) -> str:
    """Why a run failed or was interrupted, for a list: its first line that says something,
    cut to ``limit`` characters; an ellipsis says more follows (more lines, or the rest of
    the line)."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    if len(first) > limit:
        return first[: limit - 1].rstrip() + "…"
    return first if len(lines) == 1 else f"{first} …"


def distributed_label(run: Mapping[str, Any]) -> str:
    """A distributed training run's scheme and workers as its lockfile pins them
    (``allreduce, 2 workers``; ``mavg every 4 steps, 2 workers``; ``ddp, 4 workers over 2
    systems``); empty for any other run."""
    found = run.get("distributed")
    if not isinstance(found, Mapping) or not found.get("scheme"):
        return ""
    every = found.get("average_every")
    scheme = f"{found['scheme']} every {every} steps" if every else str(found["scheme"])
    workers, systems = found.get("workers"), found.get("systems")
    over = f" over {systems} systems" if isinstance(systems, int) and systems > 1 else ""
    return f"{scheme}, {workers} worker{'' if workers == 1 else 's'}{over}"


def metrics_of(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run's recorded metrics by key: under ``metrics``, else the keys ``units`` names."""
    nested = run.get("metrics")
    if isinstance(nested, Mapping):
        return dict(nested)
    return {k: run[k] for k in run.get("units") or {} if k in run}


def headline(run: Mapping[str, Any]) -> str:
    """The run's task's headline metric, its label and value (``top-1 0.9689``, ``mIoU
    0.5120``); empty where it recorded none. Flat rows without ``units`` (``runs list``) are
    looked up whole: a metric's key is never one of a run's other fields."""
    from pinbench.tasks.metrics import headline as found_headline

    nested = run.get("metrics")
    metrics = nested if isinstance(nested, Mapping) else run
    found = found_headline(metrics, run.get("task"))
    if found is None:
        return ""
    _, metric, value = found
    return f"{metric.label} {metric.show(value)}"


def undefined_of(run: Mapping[str, Any]) -> dict[str, str]:
    """The metrics the run left out as undefined, each with its reason (its details'
    ``undefined_metrics``, decision 165); empty where none or no details are at hand."""
    from pinbench.worker.undefined import DETAILS_KEY

    details = run.get("details")
    found = details.get(DETAILS_KEY) if isinstance(details, Mapping) else None
    if not isinstance(found, Mapping):
        return {}
    return {str(k): str(v) for k, v in found.items()}


def metric_rows(run: Mapping[str, Any], *, shown: Collection[str] = ()) -> list[tuple[str, str]]:
    """(label, value) for every metric the run recorded but those in ``shown`` (printed
    otherwise): its task's metrics first, in the order the task declares them, with their
    labels, those it left out as undefined among them (``undefined: reason``); then any other
    in words with its key beside (``metric_names.named``), the value in its unit."""
    from pinbench.metric_names import named
    from pinbench.tasks import metrics as declarations
    from pinbench.tasks.metrics import metric_of

    metrics = metrics_of(run)
    kind = run.get("kind") if isinstance(run.get("kind"), str) else None
    units = run.get("units") or {}
    task_name = run.get("task") if isinstance(run.get("task"), str) else None
    order = {m.name: i for i, m in enumerate(declarations.declared(task_name))} if task_name else {}
    rows: list[tuple[int, str, str, str]] = []
    for key, value in metrics.items():
        if key in shown or not isinstance(value, int | float):
            continue
        declared = metric_of(key, task_name)
        if declared is not None:
            label = declared.label if key == declared.name else f"{declared.label} ({key})"
            rank = order.get(declared.name, len(order))
            rows.append((rank, key, label, declared.show(float(value))))
        else:
            label = named(key, kind=kind)
            rows.append((len(order) + 1, key, label, _raw(float(value), str(units.get(key, "")))))
    for key, reason in undefined_of(run).items():
        if key in shown or key in metrics:
            continue
        declared = metric_of(key, task_name)
        label = key if declared is None else declared.label
        rank = len(order) + 1 if declared is None else order.get(declared.name, len(order))
        rows.append((rank, key, label, f"undefined: {reason}"))
    return [(label, value) for _, _, label, value in sorted(rows)]


def _raw(value: float, unit: str) -> str:
    """A metric no task declares, in its recorded unit (``history``'s ``units``)."""
    if unit == "ns":
        from pinbench.metric_names import fmt_ns

        return fmt_ns(value)
    if unit == "count":
        return f"{value:,.0f}"
    if unit == "bool":
        return "yes" if value else "no"
    from pinbench.metric_names import fmt_sig

    if unit in ("", "ratio"):
        return fmt_sig(value)
    if unit == "B":
        return f"{value / 2**20:,.1f} MiB"
    return f"{fmt_sig(value)} {unit}"
