"""How a run record is printed: its metrics by its task's labels, its predictions, and runs
side by side (``run``, ``runs show``, ``runs compare``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from rich.table import Table


LATENCY_ROWS = [
    *[
        (f"latency {shown}", f"latency_{tag}_ns")
        for shown, tag in (
            ("p50", "p50"),
            ("p90", "p90"),
            ("p95", "p95"),
            ("p97", "p97"),
            ("p99", "p99"),
            ("p99.9", "p99_9"),
            ("mean", "mean"),
            ("min", "min"),
            ("max", "max"),
        )
    ],
    *[
        (f"{name} {shown}", f"{key}_{tag}_ns")
        for name, key in (("TTFT", "ttft"), ("TPOT", "tpot"))
        for shown, tag in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("mean", "mean"))
    ],
]
"""Latencies (and, for a generation run, time to first token and time per output token after
it): each row LoadGen's figure (``latency_p90_ns``) beside pinbench's framework-call figure
(``framework_latency_p90_ns``), both by LoadGen's percentile rule (docs/running.md)."""
METRIC_ROWS = [
    *LATENCY_ROWS,
    *[
        (f"framework call {label.removeprefix('latency ')}", f"framework_{key}")
        for label, key in LATENCY_ROWS
    ],
]
"""Every metric the latency table shows."""
SHOWN_ABOVE = frozenset(
    [key for _, key in METRIC_ROWS]
    + [
        "throughput_tps",
        "throughput_sps",
        "time_to_accuracy_s",
        "eval_time_s",
        "loadgen_valid_bool",
    ]
    + ["energy_j", "energy_per_inference_j", "peak_rss_bytes", "peak_gpu_bytes"]
    + [
        f"{prefix}{m}_{p}_ns"
        for prefix in ("", "framework_")
        for m in ("ttft", "tpot")
        for p in ("p95", "p97", "p99_9", "min", "max")
    ]
)
"""Metrics ``print_run`` shows on rows of their own; every other recorded one follows them
(``run_metrics.metric_rows``)."""


def print_run(info: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from pinbench.energy.show import energy_and_cost
    from pinbench.run_metrics import distributed_label, metric_rows

    out = _out()
    out.print(Text(f"run {info['id']}  {info['status']}", style="bold"))
    training = (info.get("details") or {}).get("training")
    if info.get("operator"):
        out.print(f"operator {info['operator']} on {info['framework']}")
    elif isinstance(training, dict):
        reached = training.get("reached_epoch")
        scheme = distributed_label(info)
        out.print(
            f"training {info['model']} on {info['framework']}, {info['dataset']}"
            + (f", distributed: {scheme}" if scheme else "")
            + ": "
            + (f"target reached at epoch {reached}" if reached else "target not reached")
        )
    else:
        out.print(
            f"{info['model']} on {info['framework']}, {info['dataset']}, "
            f"{info['scenario']} {info['mode']}, batch {info['batch_size']}"
        )
    latencies = latency_table(info)
    if latencies is not None:
        out.print(latencies)
    table = Table("metric", "value", box=None)
    if "throughput_sps" in info:
        table.add_row("throughput", f"{info['throughput_sps']:,.0f} samples/s")
    if "throughput_tps" in info:
        table.add_row("tokens/s", f"{info['throughput_tps']:,.0f} tokens/s")
    for label, key in (
        ("time to accuracy", "time_to_accuracy_s"),
        ("eval (excluded)", "eval_time_s"),
    ):
        if key in info:
            table.add_row(label, f"{info[key]:.3f} s")
    if "peak_rss_bytes" in info:
        table.add_row("peak RSS", f"{info['peak_rss_bytes'] / 2**20:,.1f} MiB")
    if "peak_gpu_bytes" in info:
        table.add_row("peak GPU memory", f"{info['peak_gpu_bytes'] / 2**20:,.1f} MiB")
    if "loadgen_valid_bool" in info:
        table.add_row("LoadGen verdict", "VALID" if info["loadgen_valid_bool"] else "INVALID")
    for label, value in energy_and_cost(info):
        table.add_row(label, value)
    for label, value in metric_rows(info, shown=SHOWN_ABOVE):  # the task's, then the rest
        table.add_row(label, value)
    out.print(table)
    loadgen = (info.get("details") or {}).get("loadgen") or {}
    for reason in loadgen.get("invalid_reasons") or []:
        out.print(Text(f"  INVALID because {reason}", style="yellow"))
    predictions = _predictions_table(info.get("details"))
    if predictions is not None:
        out.print(predictions)
    if info.get("trace", "none") != "none":
        out.print(
            f"traced at level {info['trace']}: latencies include the profilers' overhead; "
            f"`pinbench runs trace {info['id'][:8]}` shows the trace"
        )


def latency_table(info: dict[str, Any]) -> Table | None:
    """LoadGen's latencies beside the framework call's, a row per percentile the run recorded
    in either (a run measured in accuracy mode has only the framework call's)."""
    from rich.table import Table

    from pinbench.tables import fmt_ns

    rows = [
        (label, info.get(key), info.get(f"framework_{key}"))
        for label, key in LATENCY_ROWS
        if key in info or f"framework_{key}" in info
    ]
    if not rows:
        return None
    table = Table("latency", "LoadGen", "framework call", box=None)
    for label, loadgen, framework in rows:
        table.add_row(
            label.removeprefix("latency "),
            "" if loadgen is None else fmt_ns(loadgen),
            "" if framework is None else fmt_ns(framework),
        )
    return table


SHOWN_PREDICTIONS = 10


def _predictions_table(details: dict[str, Any] | None) -> Table | None:
    """The first per-sample rows of an accuracy run, as its task recorded them
    (``reports.samples``: e.g. file, true class, top-1, score); a wrong one marked x."""
    from rich.table import Table

    from pinbench.reports.samples import sample_rows

    found = sample_rows(details, limit=SHOWN_PREDICTIONS)
    if found is None:
        return None
    recorded = len((details or {}).get("samples") or [])
    marked = any(r is not None for r in found.right)
    table = Table(
        *found.header,
        *([""] if marked else []),
        box=None,
        title=f"first {len(found.rows)} predictions (of {recorded} recorded)",
    )
    for cells, right in zip(found.rows, found.right, strict=True):
        table.add_row(*cells, *(["x" if right is False else ""] if marked else []))
    return table


def print_comparison(data: dict[str, Any], *, as_json: bool) -> None:
    from rich.table import Table

    from pinbench.run_metrics import COMPARED

    infos, differs = data.pop("infos"), data["differs"]
    if as_json:
        _print_json(data)
        return
    table = Table("", *[i["id"][:8] for i in infos], box=None)
    for k in COMPARED:
        table.add_row(k + (" *" if k in differs else ""), *[str(i[k]) for i in infos])
    for m, values in data["metrics"].items():
        table.add_row(m, *["" if v is None else f"{v:,.4g}" for v in values])
    out = _out()
    out.print(table)
    if differs:
        out.print(f"* differs between the runs: {', '.join(differs)}")
