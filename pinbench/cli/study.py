"""``pinbench study``: a matrix of models x frameworks x scenarios x systems, one lockfile and
one run per cell (``Registry.studies()``; docs/study.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.common import allow_code_option, force_option, registry
from pinbench.console import err as _err
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from rich.console import Console

study_app = click.Group(
    "study",
    help=(
        "Studies: models x frameworks x scenarios x systems, one lockfile and run per cell: "
        "run, show, report, rerun."
    ),
    no_args_is_help=True,
)
STUDY_HELP = (
    "A study file (YAML, docs/study.md), or a built-in study's name: seed, seed-quick, engines."
)
NAME_HELP = "A study's name (as run), or a study file or built-in name (not yet run: planned)."


def _say(as_json: bool) -> Any:
    from rich.text import Text

    if as_json:
        return lambda text: None
    console = _err()
    return lambda text: console.print(Text(text))


@study_app.command("run")
@click.argument("study", type=str, help=STUDY_HELP)
@click.option(
    "--runner",
    type=click.Choice(["local", "venv"]),
    default=None,
    help="Run every cell with this runner (default: the study's, else local).",
)
@allow_code_option
@json_option
def study_run(
    study: str, runner: str | None = None, allow_code: bool = False, as_json: bool = False
) -> None:
    """Lock and run every cell of STUDY not done before, in turn, printing each one's outcome.

    A study stopped part-way (Ctrl-C) resumes where it stopped when run again. Exit 0 when every
    cell is done, 1 when a cell failed or was refused (its reason in `study show`). A model
    whose manifest carries processing code runs only with --allow-code (its cells are refused
    without it, saying so)."""
    from pinbench.cli.stopping import stopped_safely

    with registry() as reg, stopped_safely() as stop:
        studies = reg.studies()
        ran = studies.run(study, runner=runner, say=_say(as_json), stop=stop, allow_code=allow_code)
    if as_json:
        _print_json(ran)
    else:
        _out().print(
            f"study {ran['name']}: {ran['ran']} ran, {ran['skipped']} done before, "
            f"{ran['failed']} failed, {ran['refused']} refused; "
            f"`pinbench study show {ran['name']}`"
        )
    if ran["failed"] or ran["refused"] or ran.get("unfinished"):
        raise SystemExit(1)


def _figure(cell: dict[str, Any], notes: list[str]) -> str:
    """What a cell shows: its figure (``studies.figures``), or its state and the number of its
    reason's note."""
    from pinbench.studies.figures import cell as figure

    shown = figure(cell)
    if shown is not None:
        return shown
    if cell["reason"]:
        if cell["reason"] not in notes:
            notes.append(cell["reason"])
        return f"{cell['state']} [{notes.index(cell['reason']) + 1}]"
    return str(cell["state"])


def _print_across_systems(console: Console, matrix: dict[str, Any]) -> None:
    """Each model's p90 latency over its p90 on its first system, as numbers, and each
    system's outliers among those ratios with Tukey's fences (the report's analysis)."""
    from rich.table import Table

    from pinbench.studies.analyses import across_systems
    from pinbench.studies.figures import across_systems as table_of
    from pinbench.studies.figures import fences

    if len(matrix["systems"]) < 2:
        return
    found = across_systems(matrix)
    header, *rows = table_of(found, [s["name"] for s in matrix["systems"]])
    if not rows:
        console.print("across systems: no model has a VALID SingleStream cell on two systems")
        return
    table = Table(title="across systems: p90 latency over the model's first system's")
    for name in header:
        table.add_column(name)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for system, flag in found["outliers"].items():
        outliers = "; ".join(flag["outliers"]) or "none"
        console.print(f"outliers on {system}: {outliers} ({fences(flag)})", markup=False)


@study_app.command("show")
@click.argument("name", type=str, help=NAME_HELP)
@json_option
def study_show(name: str, as_json: bool = False) -> None:
    """The study's matrix: a table per system, a row per model and framework, a column per scenario.

    A column per scenario and batch size, with the versions its cells ran; each cell its
    accuracy, p90 latency or Offline throughput, or its state and a note saying why it could
    not run."""
    with registry() as reg:
        matrix = reg.studies().show(name)
    if as_json:
        _print_json(matrix)
        return
    print_matrix(matrix)


def print_matrix(matrix: dict[str, Any]) -> None:
    """``study show``'s text: a table per system, the across-systems ratios, the notes."""
    from rich.table import Table

    notes: list[str] = []
    console = _out()
    console.print(f"study {matrix['name']}: {len(matrix['cells'])} cells")
    for system in matrix["systems"]:
        mine = [c for c in matrix["cells"] if c["system"] == system["name"]]
        columns: list[tuple[str, int]] = []
        rows: dict[tuple[str, str], dict[tuple[str, int], str]] = {}
        labels: dict[tuple[str, str], str] = {}
        for cell in mine:
            column = (cell["scenario"], cell["batch_size"])
            if column not in columns:
                columns.append(column)
            entry = (cell["model"], cell["framework"])
            if cell.get("framework_resolved") or entry not in labels:
                model = cell.get("model_resolved") or entry[0]
                labels[entry] = f"{model} {cell.get('framework_resolved') or entry[1]}"
            rows.setdefault(entry, {})[column] = _figure(cell, notes)
        threads = system["threads"] or "framework's"
        cpus = ",".join(map(str, system["cpus"])) if system["cpus"] else "all"
        table = Table(title=f"{system['name']} (threads {threads}, cpus {cpus})")
        table.add_column("model")
        for scenario, batch in columns:
            table.add_column(scenario + (f" b{batch}" if batch != 1 else ""))
        for entry, found in rows.items():
            table.add_row(labels[entry], *(found.get(c, "no cell") for c in columns))
        console.print(table)
    _print_across_systems(console, matrix)
    for n, note in enumerate(notes, 1):
        console.print(f"[{n}] {note}", markup=False)


@study_app.command("list")
@json_option
def study_list(as_json: bool = False) -> None:
    """Every recorded study with its cells counted by state."""
    with registry() as reg:
        rows = reg.studies().list()
    if as_json:
        _print_json(rows)
        return
    if not rows:  # as `runs list` says it: an empty listing is not a silent one
        _out().print("no studies recorded (built-in: seed, seed-quick, engines; `study run NAME`)")
        return
    for row in rows:
        counts = ", ".join(f"{n} {state}" for state, n in sorted(row["cells"].items()))
        _out().print(f"{row['name']}  {row['created_at'][:19]}  {counts}")


@study_app.command("report")
@click.argument("name", type=str, help=NAME_HELP)
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path),
    required=True,
    help="Write the report here: one self-contained HTML page.",
)
@force_option
def study_report(name: str, html_path: Path, force: bool = False) -> None:
    """The study's analyses as one HTML page.

    Accuracy against latency per system (the Pareto front), speed-ups across frameworks and
    systems, SingleStream latency against Offline throughput, batch sweeps, and the outliers
    each flags."""
    from pinbench.sdk.files import destination, write_all

    dest = destination(html_path, option="--html", force=force)
    with registry() as reg:
        page = reg.studies().report(name)
    write_all([(dest, page)])
    _err().print(f"wrote the study's report to {html_path} ({len(page):,} bytes)")


@study_app.command("rerun")
@click.argument("name", type=str, help="A study's name, as run.")
@click.option(
    "--repeat",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Runs of each cell's lockfile, as `pinbench rerun --repeat` (an accuracy cell runs once).",
)
@allow_code_option
@json_option
def study_rerun(
    name: str, repeat: int = 3, allow_code: bool = False, as_json: bool = False
) -> None:
    """Run every done cell's lockfile again on its system and print each cell's verdict.

    Each verdict comes with its reasons (`pinbench rerun`'s); exit 1 when a cell did not
    reproduce or was inconclusive. Cells whose models carry processing code need --allow-code
    again."""
    from pinbench.cli.stopping import stopped_safely

    with registry() as reg, stopped_safely() as stop:
        studies = reg.studies()
        found = studies.rerun(
            name, repeat=repeat, say=lambda _: None, stop=stop, allow_code=allow_code
        )
    if as_json:
        _print_json(found)
    else:
        for item in found:
            _out().print(f"{item['outcome']:<14} {item['label']}", markup=False)
            for line in item.get("lines") or ([item["reason"]] if item.get("reason") else []):
                _out().print(f"  {line}", markup=False)
    if any(i["outcome"] not in ("reproduced", "not run") for i in found):
        raise SystemExit(1)


@study_app.command("forget")
@click.argument("name", type=str, help="A study's name, as run.")
def study_forget(name: str) -> None:
    """Remove a recorded study and its cells, so that its name may be run from another definition.

    Its runs and lockfiles stay recorded."""
    with registry() as reg:
        cells = reg.studies().forget(name)
    _out().print(f"forgot study {name} ({cells} cells); its runs and lockfiles are kept")
