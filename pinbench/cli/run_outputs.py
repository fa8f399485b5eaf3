"""``pinbench runs outputs RUN -o FILE``: a run's recorded outputs as an ``.npy`` file
(``pinbench.evaluator.run_outputs``), from this home or, with PINBENCH_URL, the server's."""

from __future__ import annotations

from pathlib import Path

import click

from pinbench.cli.common import output_option, registry
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json


@click.command("outputs")
@click.argument("run", type=str, help="An accuracy run's id (or a unique prefix).")
@output_option("Where to write the outputs (.npy).")
@json_option
def runs_outputs(
    run: str,
    output: Path,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """Write the raw outputs an accuracy run recorded (the array its task scored: class
    scores, embeddings, a detector's output...) to an .npy file, for comparing with another
    tool.

    The bytes are checked against the sha256 the run recorded while they are copied, and must
    be a plain .npy array (never a pickle); nothing is written otherwise. A performance run
    records no outputs. With PINBENCH_URL: the server's run and blob.
    """
    from pinbench.sdk.files import destination

    destination(output, option="-o", force=force)  # refused before the run is read
    with registry() as reg:
        done = reg.run(run).export_outputs(output, force=force)
    if as_json:
        _print_json(done.to_json())
        return
    what = f"output {done.name}, " if done.name else ""
    shape = " x ".join(str(d) for d in done.shape) or "a scalar"
    _out().print(
        f"wrote {done.path}: the outputs of run {done.run} ({what}shape {shape}, "
        f"{done.size} bytes, sha256 {done.sha256})",
        markup=False,
    )
