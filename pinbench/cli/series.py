"""``pinbench series``: series of runs, their thresholds and alerts (``Registry.series()``)."""

from __future__ import annotations

import sys
from typing import Any

import click

from pinbench.cli.common import registry
from pinbench.console import columns, json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

series_app = click.Group(
    "series",
    help=(
        "Series of runs that measure the same thing (model, dataset, scenario, system): list, "
        "show, thresholds, alerts."
    ),
    no_args_is_help=True,
)
NAME_HELP = (
    "A series name, MODEL:DATASET:SCENARIO:MODE:bBATCH:SYSTEM (SYSTEM - for this machine), or "
    "its leading fields when they name one series."
)
name_argument = click.argument("name", type=str, help=NAME_HELP)


@series_app.command("list")
@json_option
def series_list(as_json: bool = False) -> None:
    """Every series: its name, how many runs, when the last ran, the metrics it recorded."""
    with registry() as reg:
        rows = reg.series().list()
    if as_json:
        _print_json(rows)
        return
    print(f"{len(rows)} series")
    lines = [(r["name"], str(r["runs"]), r["last_run"][:8], r["last"][:19]) for r in rows]
    sys.stdout.write(columns(("series", "runs", "last run", "last"), lines))


@series_app.command("show")
@name_argument
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="Show only this metric (repeat it); default: every metric the series recorded.",
)
@json_option
def series_show(name: str, metrics: tuple[str, ...] = (), as_json: bool = False) -> None:
    """Each metric over the series, run by run, with the pins that moved before each run."""
    from pinbench.errors import UserError
    from pinbench.run_figures import marked

    with registry() as reg:
        info = reg.series().show(name)
    unknown = sorted(set(metrics) - {m for p in info["points"] for m in p["metrics"]})
    if unknown:
        raise UserError(f"series {info['name']} recorded no {', '.join(map(repr, unknown))}")
    if as_json:
        _print_json(info)
        return
    shown = list(metrics) or info["metrics"]
    lines = []
    for point in info["points"]:
        values = [marked(_value(point["metrics"].get(m)), point["metrics"]) for m in shown]
        moved = "; ".join(point["moved"]) or "-"
        least = point.get("min_duration_ms")  # a server before 0017's figures sends none
        started = point["started_at"][:19]
        lines.append((point["run"][:8], started, _value(least), *values, moved))
    # a line a run, however many metrics (a table Rich fits to the terminal wrapped them)
    print(f"{info['name']} ({info['runs']} runs)")
    sys.stdout.write(columns(("run", "started", "min ms", *shown, "moved"), lines))
    _print_thresholds(info["thresholds"])


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _print_thresholds(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no thresholds (set one with `pinbench series threshold set`)")
        return
    for row in rows:
        print(f"threshold v{row['version']} {_describe(row)}")


def _describe(row: dict[str, Any]) -> str:
    parts = [row["metric"], f"test={row['test']}", f"{row['direction']} is better"]
    for field in ("max_change", "alpha", "tolerance", "window", "min_runs"):
        if row.get(field) is not None:
            parts.append(f"{field}={row[field]:g}")
    return " ".join(parts) + f" (by {row['created_by']}, {row['created_at'][:19]})"


threshold_app = click.Group(
    "threshold", help="A series' thresholds, versioned: set, list, retire.", no_args_is_help=True
)
series_app.add_command(threshold_app)


@threshold_app.command("set")
@name_argument
@click.argument("metric", type=str, help="The metric, as the runs record it (e.g. top1).")
@click.option(
    "--test",
    "test",
    type=click.Choice(["relative", "t", "mann-whitney", "exact", "tolerance"]),
    required=True,
    help=(
        "relative (--max-change), t or mann-whitney (a one-sided test at --alpha over the "
        "window; on the raw latencies for framework_latency_*), exact, tolerance (--tolerance)."
    ),
)
@click.option(
    "--direction",
    "direction",
    type=click.Choice(["lower", "higher"]),
    help="Which way is better (default: lower for *_ns, *_ms, *_s, *_bytes; else higher).",
)
@click.option(
    "--max-change",
    "max_change",
    type=float,
    help="How much worse it may get, relative (0.05 = 5 %); with t/mann-whitney the least "
    "change that counts.",
)
@click.option(
    "--alpha",
    "alpha",
    type=float,
    default=0.01,
    help="Significance: of t and mann-whitney, and (every test) of the change-point search.",
)
@click.option("--window", "window", type=int, default=10, help="The last N runs compared with.")
@click.option("--min-runs", "min_runs", type=int, default=3, help="Fewer past runs: inconclusive.")
@click.option("--tolerance", "tolerance", type=float, help="Absolute bound (tolerance test).")
@json_option
def threshold_set(
    name: str,
    metric: str,
    test: str,
    direction: str | None = None,
    max_change: float | None = None,
    alpha: float = 0.01,
    window: int = 10,
    min_runs: int = 3,
    tolerance: float | None = None,
    as_json: bool = False,
) -> None:
    """Set the series' threshold on METRIC: a new version (earlier ones are kept)."""
    with registry() as reg:
        info = reg.series().set_threshold(
            name,
            metric,
            test=test,
            direction=direction,
            max_change=max_change,
            alpha=alpha,
            window=window,
            min_runs=min_runs,
            tolerance=tolerance,
        )
    if as_json:
        _print_json(info)
        return
    what = "set" if info["added"] else "unchanged"
    _out().print(f"{what}: {info['series']} threshold v{info['version']} {_describe(info)}")


@threshold_app.command("retire")
@name_argument
@click.argument("metric", type=str, help="The metric whose threshold to retire.")
@json_option
def threshold_retire(name: str, metric: str, as_json: bool = False) -> None:
    """Stop judging METRIC in the series: a new version retires its threshold.

    Earlier versions are kept; `threshold set` adds the next one again."""
    with registry() as reg:
        info = reg.series().retire_threshold(name, metric)
    if as_json:
        _print_json(info)
        return
    _out().print(f"retired: {info['series']} threshold v{info['version']} on {info['metric']}")


@threshold_app.command("list")
@name_argument
@click.option("--all", "every_version", is_flag=True, help="Every version, not only the current.")
@json_option
def threshold_list(name: str, every_version: bool = False, as_json: bool = False) -> None:
    """The series' thresholds (each metric's current version, or --all)."""
    with registry() as reg:
        rows = reg.series().thresholds(name, every_version=every_version)
    if as_json:
        _print_json(rows)
        return
    _print_thresholds(rows)


@series_app.command("alerts")
@click.option("--series", "series", type=str, help="Only this series' alerts (its whole name).")
@click.option(
    "--state", "state", type=click.Choice(["open", "acknowledged"]), help="Only in this state."
)
@click.option("--limit", "limit", type=click.IntRange(1, 1000), default=100, help="At most N.")
@json_option
def series_alerts(
    series: str | None = None, state: str | None = None, limit: int = 100, as_json: bool = False
) -> None:
    """Alerts, newest first: regressions gates found, change points found on a server."""
    with registry() as reg:
        rows = reg.series().alerts(series=series, state=state, limit=limit)
    if as_json:
        _print_json(rows)
        return
    for row in rows:
        _out().print(
            f"#{row['id']} {row['state']:<12} {row['kind']} {row['metric']} run "
            f"{row['run'][:8]} {row['series']} ({row['created_at'][:19]})",
            soft_wrap=True,
        )


@series_app.command("ack")
@click.argument("alert_id", type=int, metavar="ALERT", help="The alert's number.")
@json_option
def series_ack(alert_id: int, as_json: bool = False) -> None:
    """Acknowledge an alert (alerts are never deleted)."""
    with registry() as reg:
        info = reg.series().acknowledge(alert_id)
    if as_json:
        _print_json(info)
        return
    _out().print(f"alert #{info['id']} acknowledged by {info['acknowledged_by']}")
