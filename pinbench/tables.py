"""Rich tables shared by the CLI and the demo."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pinbench.run_figures import fmt_ns

if TYPE_CHECKING:
    from pinbench.evaluator.verdicts.parity import Parity
    from pinbench.trace.analysis import TraceView
    from pinbench.trace.ops import CategoryRow


def parity_table(rows: list[Parity]) -> Table:
    """The first row is the reference (compared with itself); a column per figure the runs'
    task gives, then whether each run agrees with the reference by the task's rule."""
    labels = list(dict.fromkeys(f.label for r in rows for f in r.agreement.figures))
    rule = rows[0].agreement.rule if rows else ""
    table = Table(
        "run", "framework", "model", *labels, "agrees", box=None, caption=f"agrees: {rule}"
    )
    for i, r in enumerate(rows):
        shown = {f.label: f.show() for f in r.agreement.figures}
        table.add_row(
            r.run[:8] + (" (ref)" if i == 0 else ""),
            r.framework,
            r.model,
            *(shown.get(label, "") for label in labels),
            "yes" if r.agrees else "no",
        )
    return table


def print_trace(out: Console, view: TraceView, top: int) -> None:
    """What `pinbench runs trace` prints for one run: cold start, phases, operator table."""
    meta = view.meta
    info = view.run
    out.print(Text(f"run {info['id'][:8]}  traced at level {meta.get('level')}", style="bold"))
    out.print(
        f"{info['model']} on {info['framework']}, {info['scenario']} {info['mode']}, "
        f"batch {info['batch_size']}: {view.predictions} timed predictions, "
        f"model time {fmt_ns(view.model_ns)} (latencies traced)"
    )
    cold = meta.get("cold_start", {})
    if "load_ns" in cold and "first_predict_ns" in cold:
        warm = cold.get("warm_p50_ns") or 0
        ratio = (
            f" ({cold['first_predict_ns'] / warm:,.1f}x the warm p50 {fmt_ns(warm)})"
            if warm
            else ""
        )
        out.print(
            f"cold start: load {fmt_ns(cold['load_ns'])}, first predict "
            f"{fmt_ns(cold['first_predict_ns'])}{ratio}"
        )
    phases = Table("phase", "time", box=None)
    for name, ns in view.phases():
        phases.add_row(name, fmt_ns(ns))
    out.print(phases)
    if "framework_trace" not in meta:
        out.print(
            f"no operator table: traced at level {meta.get('level')!r} "
            "(framework or full record the framework's operators)"
        )
    else:
        table = Table("layer / operator", "op", "count", "total", "mean", "share", box=None)
        for row in view.ops[:top]:
            table.add_row(
                row.name,
                row.op if row.op != row.name else "",
                f"{row.count:,}",
                fmt_ns(row.total_ns),
                fmt_ns(row.mean_ns),
                f"{view.share(row):.1%}",
            )
        out.print(table)
        rest = len(view.ops) - top
        if rest > 0:
            out.print(f"... {rest} more operator(s)")
        fw = meta["framework_trace"]
        out.print(
            f"operators cover {view.covered():.1%} of model time (the rest: the "
            f"framework's own work between operators and the Python call); from "
            f"{fw['source']}, {fw['in_spans']:,} of {fw['events']:,} events inside "
            f"pinbench's spans"
        )
        if view.cold_ops:
            slow = ", ".join(f"{r.name} {fmt_ns(r.total_ns)}" for r in view.cold_ops[:3])
            out.print(f"cold predict's slowest operators: {slow}")
    for note in meta.get("system", {}).get("notes", []):
        out.print(Text(f"system: {note}", style="yellow"))
    out.print("")


def print_categories(out: Console, views: list[TraceView], rows: list[CategoryRow]) -> None:
    """Several runs' operator time per prediction, by category."""
    heads = [f"{v.run['id'][:8]} {v.run['framework'] or ''}" for v in views]
    table = Table("category (per prediction)", *heads, box=None)
    for row in rows:
        table.add_row(
            row.category,
            *[
                f"{fmt_ns(ns)} ({sh:.0%})"
                for ns, sh in zip(row.per_prediction_ns, row.shares, strict=True)
            ],
        )
    out.print(table)
    if rows:
        top = rows[0]
        out.print(
            f"largest difference: {top.category} "
            f"({fmt_ns(min(top.per_prediction_ns))} to "
            f"{fmt_ns(max(top.per_prediction_ns))} per prediction)"
        )


def operator_table(infos: list[dict[str, Any]], title: str | None = None) -> Table:
    """Operator runs (each with its ``name``: the shape or the operator): latency, work
    rates, error and validity; a failed run shows its status and reason instead."""
    table = Table(
        "shape" if title else "operator",
        "framework",
        "median",
        "p90",
        "GFLOP/s",
        "GB/s",
        "max rel err",
        "valid",
        "run",
        title=title,
        box=None,
    )
    for info in infos:
        m = _nested_metrics(info)
        op = (info.get("details") or {}).get("operator") or {}
        checked = op.get("validation") or {}
        valid = m.get("valid_bool") == 1.0
        if "valid_bool" in m:
            verdict = tick(valid) + ("" if valid else f" {checked.get('reason') or ''}")
        else:
            verdict = f"{info['status']}: {info.get('error') or ''}"
        table.add_row(
            info["name"] if title else str(info.get("operator") or info["name"]),
            str(info.get("framework") or ""),
            fmt_ns(m["latency_p50_ns"]) if "latency_p50_ns" in m else "",
            fmt_ns(m["latency_p90_ns"]) if "latency_p90_ns" in m else "",
            f"{m['achieved_flop_per_s'] / 1e9:,.1f}" if "achieved_flop_per_s" in m else "",
            f"{m['achieved_byte_per_s'] / 1e9:,.2f}" if "achieved_byte_per_s" in m else "",
            f"{m['max_rel_error']:.1e}" if "max_rel_error" in m else "",
            verdict,
            str(info["id"])[:8],
        )
    return table


def _nested_metrics(info: dict[str, Any]) -> dict[str, float]:
    """Metrics whether nested (a workspace's view) or flattened (a server's)."""
    nested = info.get("metrics")
    if isinstance(nested, dict):
        return nested
    return {k: v for k, v in info.items() if isinstance(v, float)}


def tick(ok: bool) -> str:
    return "✓" if ok else "✗"
