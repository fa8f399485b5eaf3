"""``pinbench run`` and ``pinbench rerun``: a lockfile run (here, on a server, or on cluster
systems) and a recorded run run again with a verdict, through the Python API.

The evaluator is imported by the command that uses it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.common import (
    allow_code_option,
    allow_pickle_option,
    listed,
    local_registry,
    lockfile_argument,
    progress_lines,
    registry,
    run_argument,
    sandbox_option,
)
from pinbench.cli.run_options import BAND, REPEAT, RERUN_DEFAULT, RUNNER_HELP, TRACE_HELP
from pinbench.cli.run_view import print_run
from pinbench.cli.stopping import stopped_safely
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.sdk.registry import Registry
    from pinbench.sdk.runs import Lockfile


@click.command("run")
@lockfile_argument
@click.option(
    "--runner",
    "runner",
    type=str,
    default="auto",
    help=(RUNNER_HELP),
)
@click.option(
    "--trace",
    "trace",
    type=str,
    default="none",
    help=(TRACE_HELP),
)
@allow_pickle_option
@allow_code_option
@sandbox_option
@click.option(
    "--audit",
    "audit",
    is_flag=True,
    default=False,
    help=(
        "Keep the clock on this side: LoadGen runs in pinbench's process, the model answers "
        "from its sandboxed worker; after the test MLPerf's TEST04 (a new worker answers every "
        "sample once, and the run's test may not be faster than that) and TEST01 (a new worker "
        "in accuracy mode must answer every sample as the timed one did); a failed audit makes "
        "the run INVALID. Always done for a model that carries code. Local and venv runners, "
        "performance runs, here only."
    ),
)
@click.option(
    "--on",
    "on",
    type=str,
    multiple=True,
    callback=listed,
    help=(
        "Run on cluster systems through the server (PINBENCH_URL, "
        "started with --cluster): a system's name (repeat it) or "
        "'all', every live system meeting the lockfile's placement. "
        "One run per system; a training spread over N systems "
        "(distributed.systems) is one run on the N named, rank 0 on the first "
        "(with 'all': one per N of them, by name)."
    ),
)
@click.option(
    "--retries",
    "retries",
    type=click.IntRange(min=0, max=3),
    default=1,
    help=(
        "With --on: attempts on another matching system when a run's "
        "system is lost (each attempt is a run of its own)."
    ),
)
@click.option(
    "--publish-as",
    "publish_as",
    type=str,
    metavar="model/NAME@VERSION",
    help=(
        "A training lockfile: when the run succeeds, publish its "
        "final weights as this new model version, whose manifest "
        "names the run (trained_by). Checked before the run starts; "
        "here only (not through PINBENCH_URL or --on)."
    ),
)
@json_option
def run_cmd(
    lockfile: Path,
    runner: str = "auto",
    trace: str = "none",
    allow_pickle: bool = False,
    allow_code: bool = False,
    sandbox: str = "bwrap",
    audit: bool = False,
    on: list[str] | None = None,
    retries: int = 1,
    publish_as: str | None = None,
    as_json: bool = False,
) -> None:
    """Check the lockfile and every byte it pins, run its scenario, and record the run.

    The lockfile is checked against this registry, and every pinned byte against its sha256.

    The run is recorded whatever happens: succeeded, failed with its reason, or interrupted.
    A lockfile this registry would not make (an artifact not published here, a field that
    differs from its manifest) is refused and nothing is recorded.
    """
    from pinbench.sdk.values import trace_parts

    trace_parts(trace)
    say = progress_lines(quiet=as_json)
    with registry() as reg:
        lock = reg.lockfile(lockfile)
        if publish_as is not None:
            _check_publish_as(reg, lock, publish_as, on=bool(on))
        if (on or reg.remote) and sandbox != "bwrap":
            raise UserError(
                f"--sandbox {sandbox} is a local decision: a server's and an agent's runs are "
                "sandboxed"
            )
        if (on or reg.remote) and audit:
            raise UserError(
                "--audit is a local decision: the host that keeps the clock is the one that "
                "runs it (any runner on this machine)"
            )
        if on:
            if allow_pickle or allow_code:
                flag = "--allow-pickle" if allow_pickle else "--allow-code"
                raise UserError(f"{flag} is a local decision; runs --on follow the server's")
            chains = lock.run_on(on, runner=runner, trace=trace, retries=retries, say=say)
            _print_chains(chains, as_json=as_json)
            return
        if reg.remote:
            info = lock.run(
                runner=runner,
                trace=trace,
                allow_pickle=allow_pickle,
                allow_code=allow_code,
                say=say,
            ).info
        else:
            # Ctrl-C / SIGTERM stop the evaluation safely and record it interrupted (exit 130
            # / 143)
            with stopped_safely() as stop:
                done = lock.run(
                    runner=runner,
                    trace=trace,
                    allow_pickle=allow_pickle,
                    allow_code=allow_code,
                    say=say,
                    stop=stop,
                    sandbox=sandbox,
                    audit=audit,
                )
            info = done.info
            if publish_as is not None:
                published = reg.publish_trained(done.id, publish_as, say=say)
                info["published"] = {
                    "ref": published.ref,
                    "manifest_digest": published.manifest_digest,
                }
    if as_json:
        _print_json(info)
        return
    print_run(info)
    if "published" in info:
        _out().print(f"published {info['published']['ref']} (trained_by run {info['id']})")


def _check_publish_as(reg: Registry, lock: Lockfile, target: str, *, on: bool) -> None:
    """``--publish-as``: a training lockfile, a model version not yet taken, run here."""
    reg.check_trained_target(target)  # its form first
    if lock.body.body.training is None:
        raise UserError(
            "--publish-as publishes a training run's weights; this lockfile has no training section"
        )
    if on or os.environ.get("PINBENCH_URL"):
        raise UserError(
            "--publish-as works on this machine's registry only; unset PINBENCH_URL (and drop "
            "--on), or publish the weights with the server's `pinbench runs publish`"
        )
    with local_registry() as here:
        here.check_trained_target(target, taken=True)


def _print_chains(chains: list[list[dict[str, Any]]], *, as_json: bool) -> None:
    """``run --on``'s runs, each system's chain of retries in turn; exit 1 when one failed."""
    infos = [info for chain in chains for info in chain]
    if as_json:
        _print_json(infos)
    else:
        for info in infos:
            print_run(info)
    failed = [chain[-1] for chain in chains if chain[-1]["status"] != "succeeded"]
    if failed:
        raise UserError("; ".join(f"run {i['id']} {i['status']}: {i.get('error')}" for i in failed))


@click.command("rerun")
@run_argument
@click.option(
    "--runner",
    "runner",
    type=str,
    help=(RUNNER_HELP + RERUN_DEFAULT),
)
@click.option(
    "--trace",
    "trace",
    type=str,
    help=(TRACE_HELP + " Default: the original run's level."),
)
@click.option(
    "--repeat",
    "repeat",
    type=int,
    default=REPEAT,
    help=("Performance runs: how many times to rerun (run-to-run noise)."),
)
@click.option(
    "--band",
    "band",
    type=float,
    default=BAND,
    help=(
        "How much the reruns' median latencies may disagree with each "
        "other (largest / smallest - 1) for latency to count as "
        "reproduced; more is inconclusive."
    ),
)
@allow_pickle_option
@allow_code_option
@sandbox_option
@json_option
def rerun_cmd(
    run: str,
    runner: str | None = None,
    trace: str | None = None,
    repeat: int = REPEAT,
    band: float = BAND,
    allow_pickle: bool = False,
    allow_code: bool = False,
    sandbox: str = "bwrap",
    as_json: bool = False,
) -> None:
    """Run a recorded run's lockfile again and print a verdict: inputs, accuracy, latency.

    The original's median latency is judged against a 99% prediction interval built from
    the reruns' medians (run-to-run noise), and the Mann-Whitney U test on the raw per-query
    latencies: a change counts when the original is outside the interval, p < 0.01 and the
    medians differ by 5% or more. Accuracy must be identical. When the reruns' medians disagree
    with each other by more than --band, latency is inconclusive rather than reproduced.

    Exit codes: 0 reproduced, 1 not reproduced (or a user error), 4 inconclusive (inputs and
    accuracy reproduced, latency undecided).
    """
    from rich.text import Text

    from pinbench.sdk.registry import Registry
    from pinbench.sdk.values import trace_parts as parts

    if not 0 < band < 10:
        raise click.BadParameter(f"--band must be between 0 and 10, got {band}")
    if trace is not None:
        parts(trace)
    say = progress_lines(quiet=as_json)
    with Registry() as reg, stopped_safely() as stop:  # this machine's, as its runs are
        verdict = reg.run(run).rerun(
            repeat=repeat,
            runner=runner,
            say=say,
            trace=trace,
            allow_pickle=allow_pickle,
            allow_code=allow_code,
            stop=stop,
            band=band,
            sandbox=sandbox,
        )
    if as_json:
        _print_json(verdict.to_json())
    else:
        out = _out()
        ids = ", ".join(r["id"][:8] for r in verdict.reruns)
        out.print(f"reran {verdict.original['id'][:8]} as {ids}")
        styles = {"reproduced": "bold green", "not reproduced": "bold red"}
        for line in verdict.lines:
            style = styles.get(line.split(":")[0], "")
            out.print(Text(line, style="bold yellow" if line.startswith("inconclusive") else style))
    if verdict.outcome != "reproduced":
        raise click.exceptions.Exit(4 if verdict.outcome == "inconclusive" else 1)
