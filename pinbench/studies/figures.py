"""How a study shows its numbers, one way for ``study show``, the HTML report and the web UI:
every figure through the one figure rule (``shown.fmt_sig``: four significant digits, never an
exponent from 10,000 up, ``94,520/s`` and not ``9.452e+04/s``), a latency in milliseconds, a
ratio with its ``x``, and a task's headline metric as its task shows it (``Metric.show``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinbench.shown import fmt_sig


def number(value: float) -> str:
    """A figure with no unit of its own (a count of samples in flight)."""
    return fmt_sig(value)


def ms(value_ms: float) -> str:
    """A latency already in milliseconds, without its unit (a column or a title says it)."""
    return fmt_sig(value_ms)


def per_second(value_sps: float) -> str:
    """A throughput: ``94,520/s``."""
    return f"{fmt_sig(value_sps)}/s"


def times(ratio: float) -> str:
    """A ratio or a speed-up: ``1.234x``."""
    return f"{fmt_sig(ratio)}x"


def accuracy(value: float, metric: str, task: str | None = None) -> str:
    """``metric``'s value as its task shows it (``top1 0.9532``: a fraction to four decimals),
    the figure rule where no task declares it."""
    from pinbench.tasks.registry import metric_of

    found = metric_of(metric, task)
    return f"{metric} {fmt_sig(value) if found is None else found.show(value)}"


def cell(c: Mapping[str, Any]) -> str | None:
    """A cell's figure: its accuracy, else a generation's token figures (``_tokens``), else its
    p90 latency and (Offline) its throughput; ``INVALID`` where LoadGen called the run so,
    ``UNSANDBOXED`` where its run was; None where its run recorded none."""
    if "accuracy" in c:
        shown = accuracy(float(c["accuracy"]), str(c["accuracy_metric"]), c.get("task"))
        return shown + _unsandboxed(c)
    text = _tokens(c) or _latency(c)
    if text is None:
        return None
    return text + ("" if c.get("loadgen_valid_bool") == 1.0 else " INVALID") + _unsandboxed(c)


def _tokens(c: Mapping[str, Any]) -> str | None:
    """A generation's figures: LoadGen's tokens per second (Offline), else its TTFT and TPOT
    p50s; None for a run that timed no tokens."""
    if c.get("scenario_name") == "Offline" and "throughput_tps" in c:
        return f"{fmt_sig(c['throughput_tps'])} tokens/s"
    if "ttft_p50_ns" in c and "tpot_p50_ns" in c:
        return f"TTFT {ms(c['ttft_p50_ns'] / 1e6)} ms, TPOT {ms(c['tpot_p50_ns'] / 1e6)} ms"
    return None


def _latency(c: Mapping[str, Any]) -> str | None:
    if "latency_p90_ns" not in c:
        return None
    if c.get("scenario_name") == "Offline" and "throughput_sps" in c:
        return per_second(c["throughput_sps"])
    return f"p90 {ms(c['latency_p90_ns'] / 1e6)} ms"


def _unsandboxed(c: Mapping[str, Any]) -> str:
    return " UNSANDBOXED" if c.get("unsandboxed_bool") == 1.0 else ""


def cell_in_full(c: Mapping[str, Any]) -> str | None:
    """A cell's figures where there is room (the report): its accuracy, else its p90 latency
    and its throughput, whatever its scenario."""
    tokens = "throughput_tps" in c or "ttft_p50_ns" in c  # a generation's: its token figures
    if tokens or "accuracy" in c or "latency_p90_ns" not in c or "throughput_sps" not in c:
        return cell(c)
    text = f"p90 {ms(c['latency_p90_ns'] / 1e6)} ms, {per_second(c['throughput_sps'])}"
    return text + ("" if c.get("loadgen_valid_bool") == 1.0 else " INVALID") + _unsandboxed(c)


def fences(flag: Mapping[str, Any]) -> str:
    """Tukey's fences of a set of values (``analyses.tukey``), or why none were computed."""
    if flag.get("fences") is None:
        return str(flag.get("reason") or "")
    low, high = flag["fences"]
    return f"fences {fmt_sig(low)} to {fmt_sig(high)}"


def across_systems(found: Mapping[str, Any], order: list[str]) -> list[list[str]]:
    """The across-systems analysis (``analyses.systems``) as a table, a row per model and a
    column per system (``order``): each model's p90 over its p90 on its first system (that
    column says ``base``), ``outlier`` beside a ratio beyond its system's Tukey fences; the
    header row first. No rows but the header where no model ran on two systems."""
    flagged = {s: set(f["outliers"]) for s, f in found["outliers"].items()}
    rows: dict[str, dict[str, str]] = {}
    for r in found["rows"]:
        row = rows.setdefault(r["model"], {r["against"]: "base"})
        outlier = " outlier" if r["model"] in flagged.get(r["system"], set()) else ""
        row[r["system"]] = times(r["ratio"]) + outlier
    return [["model", *order]] + [[m, *(row.get(s, "") for s in order)] for m, row in rows.items()]
