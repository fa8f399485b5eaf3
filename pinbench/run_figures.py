"""A run's figures as text, one way for every place that shows one run: ``pinbench run`` and
``runs show`` print them (``cli/run_view.py``) and the web UI's run page shows them, with the
same labels and units (``latency p99.9  5.5 µs``, ``LoadGen verdict  VALID``).

A run here is as ``history`` gives it: its metrics flat (``show_run``) or under ``metrics``
(``nested=True``, the API's and the reports' shape).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
COUNT_ROWS = (
    ("throughput", "throughput_sps", "samples/s"),
    ("tokens/s", "throughput_tps", "tokens/s"),
    ("queries", "queries_count", ""),
    ("framework throughput", "framework_throughput_sps", "samples/s"),
    ("framework tokens/s", "framework_throughput_tps", "tokens/s"),
    ("framework calls", "framework_calls_count", ""),
)
"""Throughputs and counts: (label, metric, unit). The first three are LoadGen's in a run under
LoadGen (labelled so), the ``framework`` ones pinbench's (decision 275); a training run's
``throughput_sps`` is its own (no LoadGen), an operator run's ``queries_count`` its calls."""


SHOWN_ABOVE = frozenset(
    [key for _, key in METRIC_ROWS]
    + [
        *(key for _, key, _ in COUNT_ROWS),
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
"""Metrics shown on rows of their own (the latency table, the named rows of ``figures``);
every other recorded one follows them (``run_metrics.metric_rows``)."""


INVALID = "INVALID"
"""The mark beside every figure of a run LoadGen called INVALID, wherever one is shown."""


def loadgen_invalid(metrics: Mapping[str, Any]) -> bool:
    """LoadGen called the run INVALID (``loadgen_valid_bool`` 0): its figures are not a
    result (too few queries, too short, over its latency bound). Accuracy runs and runs not
    under LoadGen have no verdict: never INVALID."""
    return metrics.get("loadgen_valid_bool") == 0.0


def marked(text: str, metrics: Mapping[str, Any]) -> str:
    """``text`` (a figure of the run) with ``INVALID`` beside it when LoadGen called the run
    so; empty stays empty."""
    return f"{text} {INVALID}" if text and loadgen_invalid(metrics) else text


def fmt_ns(value: float) -> str:
    """Nanoseconds for people: microseconds below a millisecond, else milliseconds."""
    return f"{value / 1e3:,.1f} µs" if value < 1e6 else f"{value / 1e6:,.2f} ms"


@dataclass(frozen=True, slots=True)
class LatencyRow:
    """One percentile: its label (``p99.9``), LoadGen's figure and the framework call's, each
    empty where the run recorded none."""

    label: str
    loadgen: str
    framework: str


@dataclass(frozen=True, slots=True)
class Figures:
    latencies: list[LatencyRow]
    """LoadGen's latencies beside the framework call's, a row per percentile the run recorded
    in either (a run measured in accuracy mode has only the framework call's)."""
    rows: list[tuple[str, str]]
    """(label, value): throughput, time to accuracy, memory, LoadGen's verdict, energy and
    cost, then its task's metrics and every other it recorded."""
    invalid: list[str]
    """Why LoadGen called the run INVALID, as it said it; empty for a valid run."""


def counts(info: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of each figure of ``COUNT_ROWS`` the run recorded, naming whose it is."""
    loadgen = "loadgen_valid_bool" in info or "framework_calls_count" in info
    rows = []
    for label, key, unit in COUNT_ROWS:
        if isinstance(info.get(key), int | float):
            whose = " (LoadGen)" if loadgen and not key.startswith("framework_") else ""
            rows.append((label + whose, f"{info[key]:,.0f}" + (f" {unit}" if unit else "")))
    return rows


def figures(run: Mapping[str, Any]) -> Figures:
    """What ``runs show`` prints of a run's measurements, as text."""
    from pinbench.energy.show import energy_and_cost
    from pinbench.run_metrics import metric_rows

    nested = run.get("metrics")
    info: dict[str, Any] = {**run, **nested} if isinstance(nested, Mapping) else dict(run)
    latencies = [
        LatencyRow(
            label.removeprefix("latency "),
            "" if info.get(key) is None else fmt_ns(info[key]),
            "" if info.get(f"framework_{key}") is None else fmt_ns(info[f"framework_{key}"]),
        )
        for label, key in LATENCY_ROWS
        if key in info or f"framework_{key}" in info
    ]
    rows = counts(info)
    for label, key in (
        ("time to accuracy", "time_to_accuracy_s"),
        ("eval (excluded)", "eval_time_s"),
    ):
        if key in info:
            rows.append((label, f"{info[key]:.3f} s"))
    if "peak_rss_bytes" in info:
        rows.append(("peak RSS", f"{info['peak_rss_bytes'] / 2**20:,.1f} MiB"))
    if "peak_gpu_bytes" in info:
        rows.append(("peak GPU memory", f"{info['peak_gpu_bytes'] / 2**20:,.1f} MiB"))
    if "loadgen_valid_bool" in info:
        rows.append(("LoadGen verdict", "VALID" if info["loadgen_valid_bool"] else "INVALID"))
    rows += energy_and_cost(info)
    rows += metric_rows(run, shown=SHOWN_ABOVE)  # the task's, then the rest
    loadgen = (info.get("details") or {}).get("loadgen") or {}
    invalid = [str(reason) for reason in loadgen.get("invalid_reasons") or []]
    return Figures(latencies, rows, invalid)
