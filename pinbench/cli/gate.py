"""``pinbench gate``: a candidate judged against its series (``pinbench.series.gate``)."""

from __future__ import annotations

from pathlib import Path

import click

from pinbench.cli.common import listed, progress_lines, registry
from pinbench.cli.run_options import RUNNER_HELP
from pinbench.console import json_option
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError


@click.command("gate")
@click.argument(
    "lockfile",
    type=click.Path(path_type=Path),
    required=False,
    help="The candidate's lockfile: run now (here, or on the server of PINBENCH_URL).",
)
@click.option(
    "--run",
    "run_ids",
    type=str,
    multiple=True,
    callback=listed,
    help="Take this recorded run as the candidate; repeat it (up to 20) to judge several runs "
    "of one lockfile together.",
)
@click.option(
    "--repeat",
    "repeat",
    type=int,
    default=None,
    help="Run the LOCKFILE this many times (1 to 20, default 1) and judge the runs together: "
    "the run-level test then has as many candidate runs (run-to-run noise), as `rerun "
    "--repeat`.",
)
@click.option(
    "--series",
    "series",
    type=str,
    help="The series to judge against (refused when the candidate is not in it); default: "
    "the candidate's own.",
)
@click.option("--runner", "runner", type=str, default="auto", help=RUNNER_HELP)
@click.option(
    "--include-invalid",
    "include_invalid",
    is_flag=True,
    help="Compare with earlier runs LoadGen called INVALID too (by default they are left out "
    "of the baseline: their numbers are not a result); such a gate records no alert.",
)
@click.option(
    "--include-unsandboxed",
    "include_unsandboxed",
    is_flag=True,
    help="Compare with earlier runs that ran UNSANDBOXED too (by default they are left out of "
    "the baseline: their figures are their own word); such a gate records no alert.",
)
@click.option(
    "--markdown",
    "markdown",
    type=click.Path(path_type=Path),
    help="Also write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY); '-' for stdout.",
)
@json_option
def gate_cmd(
    lockfile: Path | None = None,
    run_ids: list[str] | None = None,
    repeat: int | None = None,
    series: str | None = None,
    runner: str = "auto",
    markdown: Path | None = None,
    as_json: bool = False,
    include_invalid: bool = False,
    include_unsandboxed: bool = False,
) -> None:
    """Judge a candidate against its series' earlier runs under the series' thresholds.

    The candidate is one run, or several runs of one lockfile judged together (--repeat K, or
    --run given K times): the run-level test then compares K runs with the window's, which
    is what run-to-run noise needs (docs/continuous.md).

    Exit codes: 0 passed, 1 regressed (each regressed metric named with its change, test and
    p-value; recorded as an alert) or a user error, 2 inconclusive (too few runs or too much
    noise: how many reruns would settle it is said) or a usage error, 3 a failure of the
    system. With --json the gate's object (its `outcome`) is printed only when the gate
    judged, which tells a regression from a user error and inconclusive from a usage error.
    """
    from pinbench.sdk.series import check_candidates

    if (lockfile is None) == (run_ids is None):
        raise UserError("give the candidate: a LOCKFILE to run, or --run ID (not both)")
    if repeat is not None and lockfile is None:
        raise UserError("--repeat runs the LOCKFILE again: with --run, give each recorded run")
    if repeat is not None:  # a user error, exit 1: not inconclusive's 2
        check_candidates(repeat, "--repeat")
    if run_ids is not None:
        check_candidates(len(run_ids), "--run (given that many times)")
    if as_json and markdown == Path("-"):
        raise UserError("--json and --markdown - both print to stdout: write the summary to a file")
    if series is not None:  # refused before the candidate runs
        from pinbench.sdk.values import parse_series_name

        parse_series_name(series)
    summary = None
    if markdown is not None:  # a job summary: appended to, never replaced
        from pinbench.sdk.files import destination

        summary = destination(markdown, option="--markdown", dash=True, append=True)
    say = progress_lines(quiet=as_json or markdown == Path("-"))
    with registry() as reg:
        if lockfile is not None:
            locked = reg.lockfile(lockfile)
            reg.series().check_gate_lockfile(locked.body, series)
            run_ids = []
            for i in range(repeat or 1):
                if repeat is not None and repeat > 1:
                    say(f"candidate run {i + 1} of {repeat}")
                run_ids.append(locked.run(runner=runner, say=say).id)
        assert run_ids is not None
        result = reg.series().gate(
            run_ids,
            series=series,
            include_invalid=include_invalid,
            include_unsandboxed=include_unsandboxed,
        )
    if summary is not None:
        from pinbench.cli.gate_view import markdown_of
        from pinbench.sdk.files import DestinationRefused, write

        try:
            write(summary, markdown_of(result).encode("utf-8"))
        except DestinationRefused as exc:
            if as_json:  # the gate judged: its object still tells the job what it found
                _print_json(result)
            raise UserError(
                f"cannot write the summary to {markdown}: {exc.reason} (the gate judged: "
                f"{result['outcome']})"
            ) from None
    if as_json:
        _print_json(result)
    elif markdown != Path("-"):
        from pinbench.cli.gate_view import lines_of

        for line in lines_of(result):  # plain lines: no style, written as they are
            print(line)
    raise click.exceptions.Exit(int(result["exit_code"]))
