"""``pinbench bisect GOOD BAD``: which pin moved the number
(``pinbench.evaluator.verdicts.bisect``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pinbench.cli.common import local_registry, progress_lines
from pinbench.cli.run_options import BAND, MIN_EFFECT, REPEAT, RUNNER_HELP
from pinbench.cli.stopping import stopped_safely
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from rich.console import Console

    from pinbench.evaluator.verdicts.bisect import Bisection

METRIC_CHOICES = ("p50", "accuracy", "throughput")
ALIASES = {"top1": "accuracy"}
"""Earlier names of a choice, still taken (``top1`` was the accuracy choice before any task
but classification could be bisected)."""


@click.command("bisect")
@click.argument(
    "good", type=str, metavar="GOOD_RUN", help="The good run's id (or a unique prefix)."
)
@click.argument("bad", type=str, metavar="BAD_RUN", help="The bad run's id (or a unique prefix).")
@click.option(
    "--metric",
    "metric",
    type=str,
    default="p50",
    help=(
        "What changed: p50 (median latency), throughput (both judged "
        "on the raw per-query latencies, as `rerun` judges them) or "
        "accuracy (the headline metric of the runs' task, exact, "
        "accuracy runs; `top1` is taken for it too)."
    ),
)
@click.option(
    "--repeat",
    "repeat",
    type=click.IntRange(min=1, max=None),
    default=REPEAT,
    help=("Performance runs per step (recorded runs of its lockfile are reused)."),
)
@click.option(
    "--runner",
    "runner",
    type=str,
    help=(RUNNER_HELP + " Default: the good run's runner."),
)
@click.option(
    "--band",
    "band",
    type=float,
    default=BAND,
    help=(
        "How much a step's runs' median latencies may disagree with "
        "each other before its latency verdict is inconclusive (as "
        "`rerun --band`)."
    ),
)
@click.option(
    "--min-effect",
    "min_effect",
    type=float,
    default=MIN_EFFECT,
    help=(
        "The least relative change of a median latency counted as a change (default 0.05: "
        "5%). On a busy machine, raise it above the machine's own noise (0.5: a change of "
        "half the median)."
    ),
)
@json_option
def bisect_cmd(
    good: str,
    bad: str,
    metric: str = "p50",
    repeat: int = REPEAT,
    runner: str | None = None,
    band: float = BAND,
    min_effect: float = MIN_EFFECT,
    as_json: bool = False,
) -> None:
    """Find the first pin between two runs' lockfiles at which the metric changes.

    The pins that differ (model, framework, dataset, image versions; scenario, batch size,
    threads, system, limits) are changed one at a time, and an artifact goes through the
    registry's published, non-yanked versions in between; the chain is binary-searched. Each
    step's request is locked by this registry, run (or its recorded runs reused) and judged
    against GOOD and BAD with `rerun`'s statistics.

    Exit codes: 0 found (or nothing to bisect), 1 a user error, 4 inconclusive.
    """
    metric = ALIASES.get(metric, metric)
    if metric not in METRIC_CHOICES:
        raise click.BadParameter(f"--metric must be one of {', '.join(METRIC_CHOICES)}")
    if not 0 < band < 10:
        raise click.BadParameter(f"--band must be between 0 and 10, got {band}")
    if not 0 < min_effect < 10:
        raise click.BadParameter(f"--min-effect must be between 0 and 10, got {min_effect}")
    say = progress_lines(quiet=as_json)
    with local_registry() as reg, stopped_safely() as stop:
        result = reg.bisect(
            good,
            bad,
            metric=metric,
            repeat=repeat,
            runner=runner,
            say=say,
            stop=stop,
            band=band,
            min_effect=min_effect,
        )
    if as_json:
        _print_json(result.to_json())
    else:
        print_bisection(result, _out())
    if result.exit_code:
        raise click.exceptions.Exit(result.exit_code)


def print_bisection(result: Bisection, out: Console) -> None:
    """The evidence table, then what was found (``pinbench.demo.bisect`` prints it too)."""
    from rich.table import Table
    from rich.text import Text

    if result.evidence:
        table = Table(title=f"bisect {result.good[:8]} .. {result.bad[:8]} on {result.metric}")
        for column in ("step", "pin changed", "lockfile", "runs", result.metric, "verdict"):
            table.add_column(column)
        for row in result.evidence:
            runs = ", ".join(r[:8] for r in row.runs)
            if row.step not in ("good", "bad") and row.reused:
                runs += f" (reused {row.reused})"
            table.add_row(
                row.step,
                row.change,
                row.lockfile[:12],
                runs,
                _value(result.metric, row.value),
                row.side,
            )
        out.print(table)
        for row in result.evidence:
            for line in row.detail:
                out.print(f"  {row.step}: {line}", soft_wrap=True)
    if result.states:
        out.print(
            f"{len(result.pins)} pin(s) differ ({', '.join(result.pins)}); {result.states} "
            f"states in the chain; {result.new_runs} new run(s), {result.reused_runs} recorded "
            "run(s) reused"
        )
    style = {"found": "bold green", "inconclusive": "bold yellow"}.get(result.outcome, "")
    out.print(Text(result.message, style=style))


def _value(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "p50":
        return f"{value / 1e6:.3f} ms" if value >= 1e6 else f"{value / 1e3:.1f} µs"
    if metric == "throughput":
        return f"{value:.1f}/s"
    return f"{value:.4f}"
