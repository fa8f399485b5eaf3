"""``pinbench runs outputs RUN -o FILE``: a run's recorded outputs as an ``.npy`` file
(``pinbench.evaluator.records.run_outputs``), from this home or, with PINBENCH_URL, the server's."""

from __future__ import annotations

from pathlib import Path

import click

from pinbench.cli.common import output_option, registry
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json


@click.command("outputs")
@click.argument("run", type=str, help="An accuracy run's id (or a unique prefix).")
@output_option("Where to write the outputs (.npy), or the log.")
@click.option(
    "--log",
    type=click.Choice(["summary", "detail", "accuracy"]),
    default=None,
    help="LoadGen's own log of the run instead: mlperf_log_summary.txt, mlperf_log_detail.txt "
    "or mlperf_log_accuracy.json, as LoadGen wrote it.",
)
@json_option
def runs_outputs(
    run: str,
    output: Path,
    force: bool = False,
    log: str | None = None,
    as_json: bool = False,
) -> None:
    """Write the raw outputs an accuracy run recorded to an .npy file, to compare with another tool.

    The outputs are the array its task scored: class scores, embeddings, a detector's
    output.

    The bytes are checked against the sha256 the run recorded while they are copied, and must
    be a plain .npy array (never a pickle); nothing is written otherwise. A performance run
    records no outputs. With --log, LoadGen's own log of the run's test (every run that ran
    one keeps its summary, detail and accuracy logs), checked the same way. With
    PINBENCH_URL: the server's run and blob.
    """
    from pinbench.sdk.files import destination

    destination(output, option="-o", force=force)  # refused before the run is read
    with registry() as reg:
        done = reg.run(run).export_outputs(output, force=force, log=log)
    if as_json:
        _print_json(done.to_json())
        return
    if done.shape is None:
        _out().print(
            f"wrote {done.path}: LoadGen's {done.name} of run {done.run} ({done.size} bytes, "
            f"sha256 {done.sha256})",
            markup=False,
        )
        return
    what = f"output {done.name}, " if done.name else ""
    shape = " x ".join(str(d) for d in done.shape) or "a scalar"
    _out().print(
        f"wrote {done.path}: the outputs of run {done.run} ({what}shape {shape}, "
        f"{done.size} bytes, sha256 {done.sha256})",
        markup=False,
    )
