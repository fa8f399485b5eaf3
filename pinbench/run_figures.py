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

from pinbench.metric_names import fmt_ns as fmt_ns  # its home; the printouts import it from here

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
    ("throughput_sps", "samples/s"),
    ("throughput_tps", "tokens/s"),
    ("queries_count", ""),
    ("framework_throughput_sps", "samples/s"),
    ("framework_throughput_tps", "tokens/s"),
    ("framework_calls_count", ""),
)
"""Throughputs and counts: (metric, unit), each named as ``metric_names.words`` names it for
the run's kind: LoadGen's and pinbench's (decision 275), a training run's throughput, an
operator's calls."""


SHOWN_ABOVE = frozenset(
    [key for _, key in METRIC_ROWS]
    + [
        *(key for key, _ in COUNT_ROWS),
        "time_to_accuracy_s",
        "eval_time_s",
        "loadgen_valid_bool",
    ]
    + ["energy_j", "energy_per_inference_j", "peak_rss_bytes", "peak_gpu_bytes"]
    + ["model_added_rss_bytes"]
    + ["machine_others_cpu_ratio", "machine_steal_ratio", "contended_bool"]
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
BUSY = "BUSY"
"""The mark beside a figure of a run timed while other work took the machine
(``contended_bool``, ``worker.contention``)."""


def loadgen_invalid(metrics: Mapping[str, Any]) -> bool:
    """LoadGen called the run INVALID (``loadgen_valid_bool`` 0): its figures are not a
    result (too few queries, too short, over its latency bound). Accuracy runs and runs not
    under LoadGen have no verdict: never INVALID."""
    return metrics.get("loadgen_valid_bool") == 0.0


def contended(metrics: Mapping[str, Any]) -> bool:
    """The run was timed while other work took the machine (``contended_bool`` 1)."""
    return metrics.get("contended_bool") == 1.0


def unsandboxed(metrics: Mapping[str, Any]) -> bool:
    """Its system under test ran code or operations of its own outside a sandbox."""
    return metrics.get("unsandboxed_bool") == 1.0


UNSANDBOXED = "UNSANDBOXED"
"""The mark of a run whose system under test ran code or operations of its own outside a
sandbox (``unsandboxed_bool`` 1, ``runners.sandbox``): whatever it ran could reach its clock
and its user's files."""
CODE = "+code"
"""The mark of a run that ran code its user allowed beside the model (``code_bool`` 1)."""


def run_marks(metrics: Mapping[str, Any]) -> list[str]:
    """What the run itself is marked by, whatever figure is shown: ``UNSANDBOXED``, ``+code``."""
    return [
        m
        for m, on in (
            (UNSANDBOXED, metrics.get("unsandboxed_bool") == 1.0),
            (CODE, metrics.get("code_bool") == 1.0),
        )
        if on
    ]


def marks(metrics: Mapping[str, Any], *, figures_only: bool = False) -> list[str]:
    """What a run's figures carry beside them: ``INVALID``, ``BUSY``, then (unless
    ``figures_only``: where the run's own marks are shown apart) ``run_marks``."""
    found = [m for m, on in ((INVALID, loadgen_invalid(metrics)), (BUSY, contended(metrics))) if on]
    return found if figures_only else [*found, *run_marks(metrics)]


def marked(text: str, metrics: Mapping[str, Any], *, figures_only: bool = False) -> str:
    """``text`` (a figure of the run) with its ``marks`` beside it; empty stays empty."""
    found = marks(metrics, figures_only=figures_only) if text else []
    return " ".join([text, *found])


def busy_said(metrics: Mapping[str, Any], details: Mapping[str, Any] | None) -> str:
    """A contended run's machine in one line (``other processes took 37% of the machine's CPU
    while it was timed (load 2.31)``); empty for a run that was not flagged."""
    if not contended(metrics):
        return ""
    others = metrics.get("machine_others_cpu_ratio")
    parts = [f"other processes took {others:.0%}" if isinstance(others, float) else "others took"]
    steal = metrics.get("machine_steal_ratio", 0.0)
    if steal:
        parts.append(f"a hypervisor stole {steal:.0%}")
    machine = (details or {}).get("machine") or {}
    load = machine.get("load_1m") if isinstance(machine, Mapping) else None
    last = load[-1] if isinstance(load, list) and load else None
    ok = isinstance(last, int | float) and not isinstance(last, bool)
    shown = f" (load {last:.2f})" if ok else ""
    return f"{' and '.join(parts)} of the machine's CPU while it was timed{shown}"


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
    busy: str = ""
    """What else took the machine while the run was timed (``busy_said``); empty unless it
    was flagged."""


def counts(info: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of each figure of ``COUNT_ROWS`` the run recorded, naming whose it is."""
    from pinbench.metric_names import fmt_rate, words

    kind = info.get("kind")
    rows = []
    for key, unit in COUNT_ROWS:
        if isinstance(info.get(key), int | float):
            value = fmt_rate(info[key]) + (f" {unit}" if unit else "")
            rows.append((words(key, kind=kind if isinstance(kind, str) else None), value))
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
    if "model_added_rss_bytes" in info:
        rows.append(
            ("model memory (RSS added)", f"{info['model_added_rss_bytes'] / 2**20:,.1f} MiB")
        )
    if "peak_gpu_bytes" in info:
        rows.append(("peak GPU memory", f"{info['peak_gpu_bytes'] / 2**20:,.1f} MiB"))
    if "loadgen_valid_bool" in info:
        rows.append(("LoadGen verdict", "VALID" if info["loadgen_valid_bool"] else "INVALID"))
    if "contended_bool" in info:
        others, steal = info.get("machine_others_cpu_ratio"), info.get("machine_steal_ratio")
        shown = f"{BUSY}" if contended(info) else "quiet"
        if isinstance(others, int | float) and isinstance(steal, int | float):
            shown += f" (others {others:.0%} of its CPU, steal {steal:.0%})"
        rows.append(("machine while timed", shown))
    rows += energy_and_cost(info)
    rows += metric_rows(run, shown=SHOWN_ABOVE)  # the task's, then the rest
    details = info.get("details")
    loadgen = details.get("loadgen") if isinstance(details, Mapping) else None
    reasons = loadgen.get("invalid_reasons") if isinstance(loadgen, Mapping) else None
    invalid = [str(reason) for reason in reasons] if isinstance(reasons, list) else []
    return Figures(
        latencies, rows, invalid, busy_said(info, details if isinstance(details, Mapping) else None)
    )


SMALLEST_P = 1e-300
"""Below this a p-value is printed as a bound: SciPy's underflows to 0 for samples that far
apart, and "p = 0" claims a certainty no test gives."""


def p_said(p: float | None) -> str:
    """A p-value as every verdict and gate prints it: ``p = 0.0123``, ``p < 1e-300`` where it
    underflows, ``p undefined (identical samples)`` where the test has none."""
    if p is None:
        return "p undefined (identical samples)"
    return f"p < {SMALLEST_P:g}" if p < SMALLEST_P else f"p = {p:.3g}"
