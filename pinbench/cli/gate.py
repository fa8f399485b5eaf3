"""``pinbench gate``: a candidate judged against its series (``pinbench.series.gate``)."""

from __future__ import annotations

from pathlib import Path

import click

from pinbench.cli.common import progress_lines, registry
from pinbench.cli.run_options import RUNNER_HELP
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError


@click.command("gate")
@click.argument(
    "lockfile",
    type=click.Path(path_type=Path),
    required=False,
    help="The candidate's lockfile: run now (here, or on the server of PINBENCH_URL).",
)
@click.option("--run", "run_id", type=str, help="Take this recorded run as the candidate.")
@click.option(
    "--series",
    "series",
    type=str,
    help="The series to judge against (refused when the candidate is not in it); default: "
    "the candidate's own.",
)
@click.option("--runner", "runner", type=str, default="auto", help=RUNNER_HELP)
@click.option(
    "--markdown",
    "markdown",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY); '-' for stdout.",
)
@json_option
def gate_cmd(
    lockfile: Path | None = None,
    run_id: str | None = None,
    series: str | None = None,
    runner: str = "auto",
    markdown: Path | None = None,
    as_json: bool = False,
) -> None:
    """Judge a candidate against its series' earlier runs under the series' thresholds.

    Exit codes: 0 passed, 1 regressed (each regressed metric named with its change, test and
    p-value; recorded as an alert) or a user error, 2 inconclusive (too few runs or too much
    noise: how many reruns would settle it is said) or a usage error, 3 a failure of the
    system. With --json the gate's object (its `outcome`) is printed only when the gate
    judged, which tells a regression from a user error and inconclusive from a usage error.
    """
    if (lockfile is None) == (run_id is None):
        raise UserError("give the candidate: a LOCKFILE to run, or --run ID (not both)")
    if as_json and markdown == Path("-"):
        raise UserError("--json and --markdown - both print to stdout: write the summary to a file")
    if series is not None:  # refused before the candidate runs
        from pinbench.sdk.values import parse_series_name

        parse_series_name(series)
    say = progress_lines(quiet=as_json or markdown == Path("-"))
    with registry() as reg:
        if lockfile is not None:
            run = reg.lockfile(lockfile).run(runner=runner, say=say)
            run_id = run.id
        assert run_id is not None
        result = reg.series().gate(run_id, series=series)
    if markdown is not None:
        from pinbench.cli.gate_view import markdown_of

        text = markdown_of(result)
        if markdown == Path("-"):
            click.echo(text, nl=False)
        else:
            with markdown.open("a", encoding="utf-8") as out:  # a job summary is appended to
                out.write(text)
    if as_json:
        _print_json(result)
    elif markdown != Path("-"):
        from pinbench.cli.gate_view import lines_of

        for line in lines_of(result):
            _out().print(line, soft_wrap=True)
    raise click.exceptions.Exit(int(result["exit_code"]))
