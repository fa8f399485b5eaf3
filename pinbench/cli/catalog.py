"""``pinbench catalog``: the built-in catalog stage by stage, one command per stage of the DVC
pipeline (``dvc.yaml``): prepare -> train -> export -> publish -> evaluate -> report.

Each command reads the folder the stage before it wrote and writes its own; errors go through
``pinbench.cli.main`` like every other command's. The stages (and NumPy, the frameworks) are
imported by the command that runs one. ``pinbench demo``, the whole flow on the catalog, is here
too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.common import force_option, listed
from pinbench.console import err, json_option, json_text, out, print_json

if TYPE_CHECKING:
    from pinbench.benchmark.stages import Say

catalog_app = click.Group(
    "catalog",
    help="The built-in catalog stage by stage: the DVC pipeline's commands (dvc.yaml).\n\n"
    "prepare, train, export, publish, evaluate, report.",
    no_args_is_help=True,
)

PARTS = (
    "digits", "cnn", "resnet50", "efficientnet", "nsfw", "minilm", "nudenet", "gpt", "ppocr",
    "silero", "microwakeword", "magika", "crepe", "openwakeword", "faces", "llama",
)  # fmt: skip
"""``pinbench.catalog.parts.PARTS``, written out so that ``--help`` does not import the catalog
(whose package imports NumPy); ``tests/test_cli_imports.py`` checks they agree."""
ALL_PARTS = ",".join(PARTS)


def _done(data: Any, lines: list[str], *, as_json: bool) -> None:
    if as_json:
        print_json(data)
    else:
        out().print("\n".join(lines))


def _wrote(paths: list[Path], as_json: bool) -> None:
    _done([str(p) for p in paths], [f"wrote {p}" for p in paths], as_json=as_json)


def _say(as_json: bool) -> Say:
    from rich.text import Text

    if as_json:
        return lambda text: None
    console = err()
    return lambda text: console.print(Text(text, style="dim"))


_parts_option = click.option(
    "--parts",
    "parts",
    type=str,
    default=ALL_PARTS,
    help=f"Comma-separated catalog parts: {', '.join(PARTS)}.",
)


@catalog_app.command("prepare")
@click.argument("out_dir", type=click.Path(path_type=Path), help="Folder for the data (created).")
@_parts_option
@json_option
def prepare(
    out_dir: Path,
    parts: str = ALL_PARTS,
    as_json: bool = False,
) -> None:
    """Stage 1: the data (digits split, synthetic images).

    The digits train split (train's input), the test split as a dataset and, with resnet50,
    the synthetic images; prints the dataset manifests.
    """
    from pinbench.catalog import stages
    from pinbench.catalog.parts import parse_parts

    _wrote(stages.prepare(out_dir, parse_parts(parts)), as_json)


@catalog_app.command("train")
@click.argument("data_dir", type=click.Path(path_type=Path), help="The folder prepare wrote.")
@click.argument(
    "out_dir", type=click.Path(path_type=Path), help="Folder for the weights (created)."
)
@_parts_option
@json_option
def train(
    data_dir: Path,
    out_dir: Path,
    parts: str = ALL_PARTS,
    as_json: bool = False,
) -> None:
    """Stage 2: the weights, trained deterministically.

    Fixed seeds, one thread, the numeric libraries' kernels pinned (in a child process), so
    every x86-64 machine with AVX2 gets the same bits; prints the weight files.
    """
    from pinbench.catalog import stages
    from pinbench.catalog.parts import parse_parts

    _wrote(stages.train(data_dir, out_dir, parse_parts(parts)), as_json)


@catalog_app.command("export")
@click.argument("weights_dir", type=click.Path(path_type=Path), help="The folder train wrote.")
@click.argument(
    "out_dir", type=click.Path(path_type=Path), help="Folder for the catalog (created)."
)
@_parts_option
@json_option
def export(
    weights_dir: Path,
    out_dir: Path,
    parts: str = ALL_PARTS,
    as_json: bool = False,
) -> None:
    """Stage 3: the model files (ONNX, safetensors, Keras) and manifests.

    Also the framework artifacts the models need; prints the manifests.
    """
    from pinbench.catalog import stages
    from pinbench.catalog.parts import parse_parts

    _wrote(stages.export(weights_dir, out_dir, parse_parts(parts)), as_json)


@catalog_app.command("publish")
@click.argument(
    "home", type=click.Path(path_type=Path), help="The registry's PINBENCH_HOME (created)."
)
@click.argument(
    "folders",
    type=click.Path(path_type=Path),
    nargs=-1,
    required=True,
    callback=listed,
    help="Catalog folders (prepare's, export's) to publish.",
)
@click.option(
    "--record",
    "record",
    type=click.Path(path_type=Path),
    required=True,
    help="Write the refs and manifest digests published here (JSON).",
)
@force_option
@json_option
def publish(
    home: Path,
    folders: list[Path],
    record: Path,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """Stage 4: a registry with the catalog published.

    Every manifest of the folders (frameworks, datasets, then models) into the registry at
    HOME, with SQLite in it whatever PINBENCH_DATABASE_URL or PINBENCH_URL say.
    """
    from pinbench.benchmark import stages as bench
    from pinbench.sdk.files import destination, write

    dest = destination(record, option="--record", force=force)
    done = bench.publish(home, folders, _say(as_json))
    write(dest, json_text(done).encode())
    _done(done, [f"published {len(done)} artifacts to {home}; wrote {record}"], as_json=as_json)


@catalog_app.command("evaluate")
@click.argument(
    "registry", type=click.Path(path_type=Path), help="The registry publish wrote (its HOME)."
)
@click.argument(
    "out_dir",
    type=click.Path(path_type=Path),
    help=("Folder for home/ (a copy of the registry), locks/, runs.json."),
)
@_parts_option
@json_option
def evaluate(
    registry: Path,
    out_dir: Path,
    parts: str = ALL_PARTS,
    as_json: bool = False,
) -> None:
    """Stage 5: the benchmark, locked and run in a copy of the registry.

    Local runner: each logistic regression's accuracy, and the demo's runs (the CNN's
    accuracy, SingleStream and Offline, ResNet-50's SingleStream and Offline).
    """
    from pinbench.benchmark import stages as bench
    from pinbench.catalog.parts import parse_parts

    done = bench.evaluate(registry, out_dir, parse_parts(parts), _say(as_json))
    _done(
        [info for _, info in done],
        [f"ran {len(done)} evaluations; wrote {out_dir / bench.RUNS}"],
        as_json=as_json,
    )


@catalog_app.command("report")
@click.argument("eval_dir", type=click.Path(path_type=Path), help="The folder evaluate wrote.")
@click.argument(
    "out_dir", type=click.Path(path_type=Path), help="Folder for the report files (created)."
)
@click.option("--html/--no-html", "html", default=True, help="Write report.html too.")
@json_option
def report(
    eval_dir: Path,
    out_dir: Path,
    html: bool = True,
    as_json: bool = False,
) -> None:
    """Stage 6: the benchmark table, the accuracy metrics, an HTML report.

    benchmark.md and benchmark.json (models x frameworks: accuracy, latency, throughput),
    accuracy.json (the accuracy alone: the pipeline's metrics) and report.html.
    """
    from pinbench.benchmark import stages as bench

    _wrote(bench.report(eval_dir, out_dir, html=html), as_json)


@click.command("demo")
@click.option(
    "--workdir",
    "workdir",
    type=click.Path(path_type=Path),
    help="Where to write the catalog (default: HOME/demo).",
)
def demo(
    workdir: Path | None = None,
) -> None:
    """The whole flow on the built-in catalog: train, publish, resolve, lock, verify, run."""
    from pinbench.demo.flow import run_demo
    from pinbench.sdk.registry import Registry

    with Registry() as reg:  # this machine's home: the demo trains and runs here
        home = reg.home
        assert home is not None
        run_demo(reg, workdir or home / "demo", out())
