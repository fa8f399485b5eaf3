"""``pinbench runs``: recorded runs (list, cancel, publish, show, compare, report, trace,
parity, attest, outputs).

The evaluator, the reports and the trace analysis are imported by the command that uses them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinbench.cli.attest import runs_attest
from pinbench.cli.common import (
    force_option,
    listed,
    local_registry,
    progress_lines,
    publisher_option,
    registry,
    run_argument,
)
from pinbench.cli.retention import runs_delete, runs_prune
from pinbench.cli.run_outputs import runs_outputs
from pinbench.cli.run_trace import runs_trace
from pinbench.cli.run_view import print_comparison, print_run
from pinbench.console import columns, json_option
from pinbench.console import err as _err
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    pass

PAGE = 100
"""``runs list``'s page when no --limit is given."""

runs_app = click.Group(
    "runs",
    help="Recorded runs: list, show, compare, parity.",
    no_args_is_help=True,
)


@runs_app.command("list")
@click.option(
    "--limit",
    "limit",
    type=click.IntRange(min=1, max=10_000),
    default=PAGE,
    show_default=True,
    help="Show at most this many (a page).",
)
@click.option("--model", "model", help="Runs of this model: NAME or NAME@VERSION.")
@click.option("--framework", "framework", help="Runs on this framework: NAME or NAME@VERSION.")
@click.option(
    "--status",
    "status",
    help="Runs with this status: queued, running, succeeded, failed, cancelled, interrupted.",
)
@click.option("--system", "system", help="Runs on this cluster system.")
@click.option("--since", "since", help="Runs started at or after this ISO 8601 date (UTC).")
@click.option("--until", "until", help="Runs started before this ISO 8601 date (UTC).")
@click.option(
    "--after", "after", help="The next page: the runs listed after this run id (or prefix)."
)
@json_option
def runs_list(
    limit: int = PAGE,
    model: str | None = None,
    framework: str | None = None,
    status: str | None = None,
    system: str | None = None,
    since: str | None = None,
    until: str | None = None,
    after: str | None = None,
    as_json: bool = False,
) -> None:
    """Recorded runs, newest first, a page at a time.

    Filters narrow the list (they combine); a full page ends with the command for the next
    one (--after the last run's id).
    """
    from pinbench.run_figures import fmt_ns, marked, run_marks
    from pinbench.run_metrics import headline, kind_label

    with registry() as reg:
        rows = [
            r.info
            for r in reg.runs(
                limit,
                model=model,
                framework=framework,
                status=status,
                system=system,
                since=since,
                until=until,
                after=after,
            )
        ]
    if as_json:
        _print_json(rows)
        return
    if not rows:
        print("no runs recorded")
        return
    lines = []
    for r in rows:
        p50 = fmt_ns(r["latency_p50_ns"]) if "latency_p50_ns" in r else ""
        p50 = marked(p50, r, figures_only=True)
        if p50 and r.get("trace", "none") != "none":
            p50 += f" (traced: {r['trace']})"
        lines.append(
            (
                r["id"][:8],
                " ".join([r["status"], *run_marks(r)]),  # UNSANDBOXED, +code
                r["model"] or r.get("operator") or "",
                r["framework"] or "",
                kind_label(r),
                p50,
                headline(r),  # the task's headline metric: top-1, mIoU, mAP, ...
                f"{r['peak_rss_bytes'] / 2**20:,.0f} MiB" if "peak_rss_bytes" in r else "",
            )
        )
    # one line a run, whatever its width (grep finds a run whole): a listing's plain columns
    header = ("run", "status", "model", "framework", "kind", "p50 (LoadGen)", "accuracy")
    sys.stdout.write(columns((*header, "peak RSS"), lines))
    if len(rows) == limit:
        _err().print(f"more runs may follow: add --after {rows[-1]['id']}")


@runs_app.command("cancel")
@run_argument
@click.option("--wait/--no-wait", "wait", default=True, help="Wait until the run has stopped.")
@json_option
def runs_cancel(
    run: str,
    wait: bool = True,
    as_json: bool = False,
) -> None:
    """Cancel a queued run (it never starts) or a running one (its server stops it).

    Recorded `cancelled` with who asked; a finished run cannot be cancelled (exit 1). With
    PINBENCH_URL: through that server, for runs your token's user submitted (admins: any).
    """
    say = progress_lines(quiet=as_json)
    with registry() as reg:
        info = reg.cancel(run, wait=wait, say=say).info
    if as_json:
        _print_json(info)
        return
    error = f": {info['error']}" if info["error"] else ""
    _out().print(f"run {info['id']} {info['status']}{error}")


@runs_app.command("publish")
@click.argument("run", type=str, help="A succeeded training run's id (or a unique prefix).")
@click.argument("target", type=str, metavar="model/NAME@VERSION", help="The new model version.")
@publisher_option
@json_option
def runs_publish(
    run: str,
    target: str,
    publisher: str | None = None,
    as_json: bool = False,
) -> None:
    """Publish a training run's final weights as a new model version.

    The version is the trained model's manifest (format, architecture, inputs, outputs,
    labels) with the weights file replaced by the run's final weights and `trained_by`
    naming the run and its lockfile; publishing checks that claim against the recorded run.
    On this machine's registry only (run it where the server's workspace is).
    """
    if os.environ.get("PINBENCH_URL"):
        raise UserError(
            "runs publish works on this machine's registry only: unset PINBENCH_URL and run it "
            "where the runs are recorded"
        )
    with local_registry() as reg:
        result = reg.publish_trained(run, target, publisher=publisher, say=_err().print)
    info = {"ref": result.ref, "manifest_digest": result.manifest_digest, "created": result.created}
    if as_json:
        _print_json(info)
        return
    _out().print(
        f"published {info['ref']} (manifest sha256 {result.manifest_digest[:12]})"
        if result.created
        else f"{info['ref']} is already published with this manifest: nothing to do"
    )


@runs_app.command("show")
@run_argument
@json_option
def runs_show(
    run: str,
    as_json: bool = False,
) -> None:
    """One run: metrics, host facts, the lockfile it ran."""
    from rich.text import Text

    with registry() as reg:
        info = reg.run(run).info
    if as_json:
        _print_json(info)
        return
    print_run(info)
    if info["error"]:
        _out().print(Text(f"error: {info['error']}", style="red"))
    host = info["host"]
    _out().print(f"host: {host.get('cpu')}, {host.get('cores')} cores, {host.get('os')}")
    _out().print(f"lockfile: {info['lockfile']}")


@runs_app.command("compare")
@click.argument(
    "runs",
    type=str,
    nargs=-1,
    required=True,
    callback=listed,
    help="Two or more run ids (or unique prefixes).",
)
@json_option
def runs_compare(
    runs: list[str],
    as_json: bool = False,
) -> None:
    """Metrics of several runs side by side; what differs in their inputs is named."""

    with registry() as reg:
        data = reg.compare(runs)
    print_comparison(data, as_json=as_json)


@runs_app.command("report")
@click.argument(
    "runs",
    type=str,
    nargs=-1,
    required=False,
    callback=listed,
    help="Run ids (or unique prefixes), one or more.",
)
@click.option(
    "--html", "html", type=click.Path(path_type=Path), help="Write a self-contained HTML page here."
)
@click.option("--md", "md", type=click.Path(path_type=Path), help="Write a Markdown report here.")
@click.option(
    "--csv",
    "csv",
    type=click.Path(path_type=Path),
    help="Write the raw per-query latencies as CSV.",
)
@click.option(
    "--parquet",
    "parquet",
    type=click.Path(path_type=Path),
    help="Write the raw per-query latencies as Parquet.",
)
@force_option
def runs_report(
    runs: list[str] | None = None,
    html: Path | None = None,
    md: Path | None = None,
    csv: Path | None = None,
    parquet: Path | None = None,
    force: bool = False,
) -> None:
    """A report over recorded runs: HTML (opens with no network), Markdown, CSV, Parquet.

    The HTML page holds the lockfile summary, the environment, the metric tables, the latency
    distribution (CDF and histogram) per run, latency vs throughput across a batch-size sweep,
    accuracy vs latency across models and frameworks, and a diff of the runs' lockfiles and
    environments. CSV and Parquet hold one row per query. Runs of different models or
    scenarios may be reported together; the report names what differs.
    """

    wanted = {f: p for f, p in (("html", html), ("md", md), ("csv", csv), ("parquet", parquet))}
    outputs = {f: p for f, p in wanted.items() if p is not None}
    if not outputs:
        raise UserError(
            "name at least one output: --html FILE, --md FILE, --csv FILE or --parquet FILE"
        )
    from pinbench.sdk.files import destination, distinct, write_all

    dests = {f: destination(p, option=f"--{f}", force=force) for f, p in outputs.items()}
    distinct(list(dests.values()))
    ids = runs or []
    with registry() as reg:
        made = reg.report(ids, list(outputs))
    write_all([(dest, made[fmt]) for fmt, dest in dests.items()])
    for fmt, path in outputs.items():
        _err().print(f"wrote {fmt} report to {path} ({len(made[fmt]):,} bytes)")


@runs_app.command("parity")
@click.argument("reference", type=str, help="The reference accuracy run.")
@click.argument(
    "others",
    type=str,
    nargs=-1,
    required=True,
    callback=listed,
    help="Accuracy runs to compare with it.",
)
@json_option
def runs_parity(
    reference: str,
    others: list[str],
    as_json: bool = False,
) -> None:
    """Cross-framework parity: accuracy runs on one dataset compared by what their task scores.

    Prints, for each run against the reference, the figures its task compares (the README's
    "Parity" says each task's) and whether it agrees by the task's rule.
    """
    from pinbench.tables import parity_table

    with local_registry() as reg:
        rows = reg.parity(reference, others)
    if as_json:
        _print_json([r.to_json() for r in rows])
        return
    _out().print(parity_table(rows))


runs_app.add_command(runs_attest)
runs_app.add_command(runs_outputs)
runs_app.add_command(runs_trace)
runs_app.add_command(runs_delete)
runs_app.add_command(runs_prune)
