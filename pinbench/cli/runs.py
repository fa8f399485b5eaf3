"""Evaluation: ``run``, ``rerun``, ``demo`` and ``pinbench runs`` (list, cancel, show,
compare, report, trace, parity).

The evaluator, the reports and the trace analysis are imported by the command that uses them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.attest import runs_attest
from pinbench.cli.common import (
    listed,
    progress_lines,
    registry,
    remote_or_here,
    workspace,
    write_atomic,
)
from pinbench.cli.run_outputs import runs_outputs
from pinbench.console import err as _err
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import PinbenchError, UserError

if TYPE_CHECKING:
    from rich.table import Table

    from pinbench.evaluator.stop import Stop
    from pinbench.registry.lockfile import Lockfile
    from pinbench.remote import Remote
    from pinbench.trace.analysis import TraceView
    from pinbench.workspace import Workspace

runs_app = click.Group(
    "runs",
    help="Recorded runs: list, show, compare, parity.",
    no_args_is_help=True,
)

RUNNER_HELP = (
    "Where to run: auto (docker if the lockfile pins an image and a Docker Engine answers, "
    "else venv), local (this interpreter, as installed), venv (a uv environment from the "
    "framework's hash-pinned requirements, cached by digest), docker (the pinned image)."
)
RERUN_DEFAULT = " Default: the original run's runner."
REPEAT = 3
"""``rerun --repeat``'s default: ``pinbench.evaluator.rerun.REPEAT``, written out so that
``--help`` does not import the evaluator (``tests/test_cli_imports.py`` checks they agree)."""
BAND = 0.10
"""``rerun --band``'s default: ``pinbench.evaluator.verdict.BAND`` (checked the same way)."""


TRACE_HELP = (
    "Trace level: none; model (pipeline spans: load, preprocess, cold first predict, warm-up, "
    "each timed predict, postprocess); framework (model + the framework profiler's operators); "
    "system (model + CPU, memory and, with NVML, GPU samples); full (all). A traced run's "
    "latencies include the profilers' overhead and are marked traced. "
    "See `pinbench runs trace`."
)


@click.command("run")
@click.argument(
    "lockfile", type=click.Path(path_type=Path), help="A lockfile written by `pinbench lock`."
)
@click.option(
    "--runner",
    "runner",
    type=str,
    default="auto",
    help=(
        "Where to run: auto (docker if the lockfile pins an image and "
        "a Docker Engine answers, else venv), local (this "
        "interpreter, as installed), venv (a uv environment from the "
        "framework's hash-pinned requirements, cached by digest), "
        "docker (the pinned image)."
    ),
)
@click.option(
    "--trace",
    "trace",
    type=str,
    default="none",
    help=(
        "Trace level: none; model (pipeline spans: load, preprocess, "
        "cold first predict, warm-up, each timed predict, "
        "postprocess); framework (model + the framework profiler's "
        "operators); system (model + CPU, memory and, with NVML, GPU "
        "samples); full (all). A traced run's latencies include the "
        "profilers' overhead and are marked traced. See `pinbench "
        "runs trace`."
    ),
)
@click.option(
    "--allow-pickle",
    "allow_pickle",
    is_flag=True,
    default=False,
    help=(
        "This run may unpickle a torch-pickle model whose manifest "
        "says `trusted: true` (unpickling runs the publisher's code: "
        "only for publishers you trust)."
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
        "One run per system."
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
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
def run_cmd(
    lockfile: Path,
    runner: str = "auto",
    trace: str = "none",
    allow_pickle: bool = False,
    on: list[str] | None = None,
    retries: int = 1,
    publish_as: str | None = None,
    as_json: bool = False,
) -> None:
    """Check the lockfile against this registry, verify every pinned byte, run the lockfile's
    scenario, and record the run.

    The run is recorded whatever happens: succeeded, failed with its reason, or interrupted.
    A lockfile this registry would not make (an artifact not published here, a field that
    differs from its manifest) is refused and nothing is recorded.
    """
    from pinbench.registry.lockfile import Lockfile
    from pinbench.trace.levels import parts

    parts(trace)
    lock = Lockfile.read(lockfile)
    say = progress_lines(quiet=as_json)
    if publish_as is not None:
        _check_publish_as(lock, publish_as, on=bool(on))

    if on:
        _run_on(
            lock,
            runner,
            trace,
            on,
            retries=retries,
            allow_pickle=allow_pickle,
            as_json=as_json,
            say=say,
        )
        return

    from pinbench.sdk.runs import Lockfile as Pinned

    with registry() as reg:
        pinned = Pinned(lock, reg)
        if reg.remote:
            info = pinned.run(runner=runner, trace=trace, allow_pickle=allow_pickle, say=say).info
        else:
            # Ctrl-C / SIGTERM stop the evaluation safely and record it interrupted (exit 130
            # / 143)
            with stopped_safely() as stop:
                done = pinned.run(
                    runner=runner, trace=trace, allow_pickle=allow_pickle, say=say, stop=stop
                )
            info = done.info
            if publish_as is not None:
                info["published"] = _publish_weights(reg.workspace(), done.id, publish_as, say)
    if as_json:
        _print_json(info)
        return
    _print_run(info)
    if "published" in info:
        _out().print(f"published {info['published']['ref']} (trained_by run {info['id']})")


def _check_publish_as(lock: Lockfile, target: str, *, on: bool) -> None:
    """``--publish-as``: a training lockfile, a model version not yet taken, run here."""
    from pinbench.evaluator.trained_model import check_target, target_ref

    ref = target_ref(target)
    if lock.body.training is None:
        raise UserError(
            "--publish-as publishes a training run's weights; this lockfile has no training section"
        )
    if on or os.environ.get("PINBENCH_URL"):
        raise UserError(
            "--publish-as works on this machine's registry only; unset PINBENCH_URL (and drop "
            "--on), or publish the weights with the server's `pinbench runs publish`"
        )
    with workspace() as ws:
        check_target(ws, ref)


def _publish_weights(
    ws: Workspace, run_id: str, target: str, say: Callable[[str], None]
) -> dict[str, Any]:
    from pinbench.evaluator.trained_model import publish_trained

    result = publish_trained(ws, run_id, target, say=say)
    return {"ref": str(result.ref), "manifest_digest": result.manifest_digest.hex}


def _run_on(
    lock: Lockfile,
    runner: str,
    trace: str,
    on: list[str],
    *,
    retries: int,
    allow_pickle: bool,
    as_json: bool,
    say: Callable[[str], None],
) -> None:
    """``run --on``: through the server, one run per system; each followed to its end."""
    from pinbench.remote import remote_from_env

    if allow_pickle:
        raise UserError("--allow-pickle is a local decision; runs --on follow the server's")
    if "all" in on and on != ["all"]:
        raise UserError("--on all stands alone: every live system meeting the lockfile")
    with remote_from_env() as remote:
        if remote is None:
            raise UserError(
                "--on runs through a server started with --cluster: set PINBENCH_URL "
                "(and PINBENCH_TOKEN)"
            )
        queued = remote.submit_on(lock, runner, trace, on, retries=retries)
        for run in queued:
            say(f"queued run {run['id']} on system {run.get('system') or '?'}")
        chains = [_follow(remote, run["id"], retries, say) for run in queued]
    infos = [info for chain in chains for info in chain]
    if as_json:
        _print_json(infos)
    else:
        for info in infos:
            _print_run(info)
    failed = [chain[-1] for chain in chains if chain[-1]["status"] != "succeeded"]
    if failed:
        raise UserError("; ".join(f"run {i['id']} {i['status']}: {i.get('error')}" for i in failed))


RETRY_WAIT_S = 30.0
LOST = "lost during the run"


def _follow(
    remote: Remote, run_id: str, retries: int, say: Callable[[str], None]
) -> list[dict[str, Any]]:
    """A run and the retries the server made of it (its system lost), each to its end."""
    import time

    chain = [remote.wait(run_id, say)]
    while retries > 0 and chain[-1]["status"] == "failed" and LOST in (chain[-1]["error"] or ""):
        deadline = time.monotonic() + RETRY_WAIT_S
        found = None
        while found is None and time.monotonic() < deadline:
            found = next(
                (r for r in remote.runs(200) if r.get("retry_of") == chain[-1]["id"]), None
            )
            if found is None:
                time.sleep(0.5)
        if found is None:
            break
        say(f"run {chain[-1]['id'][:8]} retried as {found['id']} on system {found['system']}")
        chain.append(remote.wait(found["id"], say))
        retries -= 1
    return chain


METRIC_ROWS = [
    ("latency p50", "latency_p50_ns"),
    ("latency p90", "latency_p90_ns"),
    ("latency p95", "latency_p95_ns"),
    ("latency p99", "latency_p99_ns"),
    ("latency p99.9", "latency_p99_9_ns"),
    ("latency mean", "latency_mean_ns"),
]
SHOWN_ABOVE = frozenset(
    [key for _, key in METRIC_ROWS]
    + ["throughput_sps", "time_to_accuracy_s", "eval_time_s", "loadgen_valid_bool"]
    + ["energy_j", "energy_per_inference_j"]
)
"""Metrics ``_print_run`` shows on rows of their own; every other recorded one follows them
(``run_metrics.metric_rows``)."""


def _print_run(info: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from pinbench.energy.show import energy_and_cost
    from pinbench.run_metrics import metric_rows
    from pinbench.tables import fmt_ns

    out = _out()
    out.print(Text(f"run {info['id']}  {info['status']}", style="bold"))
    training = (info.get("details") or {}).get("training")
    if info.get("operator"):
        out.print(f"operator {info['operator']} on {info['framework']}")
    elif isinstance(training, dict):
        reached = training.get("reached_epoch")
        out.print(
            f"training {info['model']} on {info['framework']}, {info['dataset']}: "
            + (f"target reached at epoch {reached}" if reached else "target not reached")
        )
    else:
        out.print(
            f"{info['model']} on {info['framework']}, {info['dataset']}, "
            f"{info['scenario']} {info['mode']}, batch {info['batch_size']}"
        )
    table = Table("metric", "value", box=None)
    for label, key in METRIC_ROWS:
        if key in info:
            table.add_row(label, fmt_ns(info[key]))
    if "throughput_sps" in info:
        table.add_row("throughput", f"{info['throughput_sps']:,.0f} samples/s")
    for label, key in (
        ("time to accuracy", "time_to_accuracy_s"),
        ("eval (excluded)", "eval_time_s"),
    ):
        if key in info:
            table.add_row(label, f"{info[key]:.3f} s")
    if "loadgen_valid_bool" in info:
        table.add_row("LoadGen verdict", "VALID" if info["loadgen_valid_bool"] else "INVALID")
    for label, value in energy_and_cost(info):
        table.add_row(label, value)
    for label, value in metric_rows(info, shown=SHOWN_ABOVE):  # the task's, then the rest
        table.add_row(label, value)
    out.print(table)
    loadgen = (info.get("details") or {}).get("loadgen") or {}
    for reason in loadgen.get("invalid_reasons") or []:
        out.print(Text(f"  INVALID because {reason}", style="yellow"))
    predictions = _predictions_table(info.get("details"))
    if predictions is not None:
        out.print(predictions)
    if info.get("trace", "none") != "none":
        out.print(
            f"traced at level {info['trace']}: latencies include the profilers' overhead; "
            f"`pinbench runs trace {info['id'][:8]}` shows the trace"
        )


SHOWN_PREDICTIONS = 10


def _predictions_table(details: dict[str, Any] | None) -> Table | None:
    """The first per-sample rows of an accuracy run, as its task recorded them
    (``reports.samples``: e.g. file, true class, top-1, score); a wrong one marked x."""
    from rich.table import Table

    from pinbench.reports.samples import sample_rows

    found = sample_rows(details, limit=SHOWN_PREDICTIONS)
    if found is None:
        return None
    recorded = len((details or {}).get("samples") or [])
    marked = any(r is not None for r in found.right)
    table = Table(
        *found.header,
        *([""] if marked else []),
        box=None,
        title=f"first {len(found.rows)} predictions (of {recorded} recorded)",
    )
    for cells, right in zip(found.rows, found.right, strict=True):
        table.add_row(*cells, *(["x" if right is False else ""] if marked else []))
    return table


@runs_app.command("list")
@click.option("--limit", "limit", type=int, help="Show at most this many.")
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
def runs_list(
    limit: int | None = None,
    as_json: bool = False,
) -> None:
    """Recorded runs, newest first."""
    from rich.table import Table

    from pinbench.run_metrics import headline, kind_label
    from pinbench.tables import fmt_ns

    with registry() as reg:
        rows = [r.info for r in reg.runs(limit)]
    if as_json:
        _print_json(rows)
        return
    table = Table("run", "status", "model", "framework", "kind", "p50", "accuracy", box=None)
    for r in rows:
        p50 = fmt_ns(r["latency_p50_ns"]) if "latency_p50_ns" in r else ""
        if p50 and r.get("trace", "none") != "none":
            p50 += f" (traced: {r['trace']})"
        table.add_row(
            r["id"][:8],
            r["status"],
            r["model"] or r.get("operator") or "",
            r["framework"] or "",
            kind_label(r),
            p50,
            headline(r),  # the task's headline metric: top-1, mIoU, mAP, ...
        )
    _out().print(table if rows else "no runs recorded")


@runs_app.command("cancel")
@click.argument("run", type=str, help="A run id (or a unique prefix).")
@click.option("--wait/--no-wait", "wait", default=True, help="Wait until the run has stopped.")
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
def runs_cancel(
    run: str,
    wait: bool = True,
    as_json: bool = False,
) -> None:
    """Cancel a queued run (it never starts) or a running one (its server stops it).

    Recorded `cancelled` with who asked; a finished run cannot be cancelled (exit 1). With
    PINBENCH_URL: through that server, for runs your token's user submitted (admins: any).
    """
    from pinbench.evaluator.history import show_run

    say = progress_lines(quiet=as_json)

    def there(remote: Remote) -> dict[str, Any]:
        info = remote.cancel(run)
        return remote.wait(info["id"], say) if wait else info

    def here(ws: Workspace) -> dict[str, Any]:
        from pinbench.evaluator.cancel import Canceller, request_cancel, wait_finished

        run_id, _ = request_cancel(ws, run, Canceller(None))
        return wait_finished(ws, run_id, say) if wait else show_run(ws, run_id)

    info = remote_or_here(there, here)
    if as_json:
        _print_json(info)
        return
    error = f": {info['error']}" if info["error"] else ""
    _out().print(f"run {info['id']} {info['status']}{error}")


@runs_app.command("publish")
@click.argument("run", type=str, help="A succeeded training run's id (or a unique prefix).")
@click.argument("target", type=str, metavar="model/NAME@VERSION", help="The new model version.")
@click.option("--publisher", "publisher", type=str, help="Who publishes (default: $USER).")
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
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
    from pinbench.evaluator.trained_model import publish_trained

    if os.environ.get("PINBENCH_URL"):
        raise UserError(
            "runs publish works on this machine's registry only: unset PINBENCH_URL and run it "
            "where the runs are recorded"
        )
    with workspace() as ws:
        result = publish_trained(ws, run, target, publisher=publisher, say=_err().print)
    info = {
        "ref": str(result.ref),
        "manifest_digest": result.manifest_digest.hex,
        "created": result.created,
    }
    if as_json:
        _print_json(info)
        return
    _out().print(
        f"published {info['ref']} (manifest sha256 {result.manifest_digest.hex[:12]})"
        if result.created
        else f"{info['ref']} is already published with this manifest: nothing to do"
    )


@runs_app.command("show")
@click.argument("run", type=str, help="A run id (or a unique prefix).")
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
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
    _print_run(info)
    if info["error"]:
        _out().print(Text(f"error: {info['error']}", style="red"))
    host = info["host"]
    _out().print(f"host: {host.get('cpu')}, {host.get('cores')} cores, {host.get('os')}")
    _out().print(f"lockfile: {info['lockfile']}")


@click.command("rerun")
@click.argument("run", type=str, help="A run id (or a unique prefix).")
@click.option(
    "--runner",
    "runner",
    type=str,
    help=(
        "Where to run: auto (docker if the lockfile pins an image and "
        "a Docker Engine answers, else venv), local (this "
        "interpreter, as installed), venv (a uv environment from the "
        "framework's hash-pinned requirements, cached by digest), "
        "docker (the pinned image). Default: the original run's "
        "runner."
    ),
)
@click.option(
    "--trace",
    "trace",
    type=str,
    help=(
        "Trace level: none; model (pipeline spans: load, preprocess, "
        "cold first predict, warm-up, each timed predict, "
        "postprocess); framework (model + the framework profiler's "
        "operators); system (model + CPU, memory and, with NVML, GPU "
        "samples); full (all). A traced run's latencies include the "
        "profilers' overhead and are marked traced. See `pinbench "
        "runs trace`. Default: the original run's level."
    ),
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
@click.option(
    "--allow-pickle",
    "allow_pickle",
    is_flag=True,
    default=False,
    help=(
        "This run may unpickle a torch-pickle model whose manifest "
        "says `trusted: true` (unpickling runs the publisher's code: "
        "only for publishers you trust)."
    ),
)
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
def rerun_cmd(
    run: str,
    runner: str | None = None,
    trace: str | None = None,
    repeat: int = REPEAT,
    band: float = BAND,
    allow_pickle: bool = False,
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
    from pinbench.trace.levels import parts

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
            stop=stop,
            band=band,
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


@runs_app.command("compare")
@click.argument(
    "runs",
    type=str,
    nargs=-1,
    required=True,
    callback=listed,
    help="Two or more run ids (or unique prefixes).",
)
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
def runs_compare(
    runs: list[str],
    as_json: bool = False,
) -> None:
    """Metrics of several runs side by side; what differs in their inputs is named."""

    with registry() as reg:
        data = reg.compare(runs)
    _print_comparison(data, as_json=as_json)


def _print_comparison(data: dict[str, Any], *, as_json: bool) -> None:
    from rich.table import Table

    from pinbench.evaluator.history import COMPARED

    infos, differs = data.pop("infos"), data["differs"]
    if as_json:
        _print_json(data)
        return
    table = Table("", *[i["id"][:8] for i in infos], box=None)
    for k in COMPARED:
        table.add_row(k + (" *" if k in differs else ""), *[str(i[k]) for i in infos])
    for m, values in data["metrics"].items():
        table.add_row(m, *["" if v is None else f"{v:,.4g}" for v in values])
    out = _out()
    out.print(table)
    if differs:
        out.print(f"* differs between the runs: {', '.join(differs)}")


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
def runs_report(
    runs: list[str] | None = None,
    html: Path | None = None,
    md: Path | None = None,
    csv: Path | None = None,
    parquet: Path | None = None,
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
    ids = runs or []
    with registry() as reg:
        made = reg.report(ids, list(outputs))
    for fmt, path in outputs.items():
        write_atomic(path, made[fmt])
        _err().print(f"wrote {fmt} report to {path} ({len(made[fmt]):,} bytes)")


@runs_app.command("trace")
@click.argument(
    "runs",
    type=str,
    nargs=-1,
    required=True,
    callback=listed,
    help="A traced run; several to compare their breakdowns.",
)
@click.option(
    "--top",
    "top",
    type=click.IntRange(min=1, max=None),
    default=15,
    help="Show the slowest N operators.",
)
@click.option(
    "--chrome",
    "chrome",
    type=click.Path(path_type=Path),
    help=("Write the (first) run's Chrome trace JSON here (Perfetto, chrome://tracing)."),
)
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
def runs_trace(
    runs: list[str],
    top: int = 15,
    chrome: Path | None = None,
    as_json: bool = False,
) -> None:
    """A traced run's inspection: cold start, phases, and the per-layer/operator table (count,
    total, mean, share of model time), slowest first. With several runs (e.g. the same model
    on ONNX Runtime and PyTorch) their operator time per prediction is compared by category.
    """
    import json

    from pinbench.evaluator.history import show_run
    from pinbench.tables import print_categories, print_trace
    from pinbench.trace.analysis import TraceView
    from pinbench.trace.analysis import compare as compare_traces
    from pinbench.trace.summary import trace_of

    def there(remote: Remote) -> list[TraceView]:
        infos = [remote.run(r) for r in runs]
        return [TraceView(i, remote.trace(i)) for i in infos]

    def here(ws: Workspace) -> list[TraceView]:
        infos = [show_run(ws, r) for r in runs]
        return [TraceView(i, trace_of(ws, i)) for i in infos]

    views = remote_or_here(there, here)
    if chrome is not None:
        write_atomic(chrome, json.dumps(views[0].trace).encode())
    categories = compare_traces(views) if len(views) > 1 else []
    if as_json:
        _print_json(
            {
                "runs": [v.to_json(top) for v in views],
                "categories": [
                    {
                        "category": c.category,
                        "per_prediction_ns": c.per_prediction_ns,
                        "shares": c.shares,
                    }
                    for c in categories
                ],
            }
        )
        return
    out = _out()
    for view in views:
        print_trace(out, view, top)
    if categories:
        print_categories(out, views, categories)
    if chrome is not None:
        _err().print(f"wrote {chrome} (open it in https://ui.perfetto.dev or chrome://tracing)")


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
@click.option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text.")
def runs_parity(
    reference: str,
    others: list[str],
    as_json: bool = False,
) -> None:
    """Cross-framework parity: accuracy runs on one dataset compared by what their task scores.

    Prints, for each run against the reference, the figures its task compares (the README's
    "Parity" says each task's) and whether it agrees by the task's rule.
    """
    from pinbench.evaluator.parity import parity
    from pinbench.tables import parity_table

    with workspace() as ws:
        rows = parity(ws, reference, others)
    if as_json:
        _print_json([r.to_json() for r in rows])
        return
    _out().print(parity_table(rows))


@contextmanager
def stopped_safely() -> Iterator[Stop]:
    """Ctrl-C / SIGTERM stop the evaluation safely and record it interrupted (exit 130 /
    143); a LoadGen test left running on its thread ends the process without teardown."""
    from pinbench.evaluator.stop import Stop, stop_on_signals

    with stop_on_signals(Stop()) as stop:
        try:
            yield stop
        except PinbenchError as exc:
            if stop.left_running:  # recorded; LoadGen's thread must not see a teardown
                _exit_now(exc)
            raise


def _exit_now(exc: PinbenchError) -> None:
    """Print the error and end the process at once, skipping interpreter teardown: a stopped
    LoadGen test still running on its thread would crash in it (``pinbench.evaluator.stop``)."""
    from rich.text import Text

    _err().print(Text.assemble(("error: ", "bold red"), str(exc)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.exit_code)


runs_app.add_command(runs_attest)
runs_app.add_command(runs_outputs)
