"""The ``pinbench`` command: a thin layer over the library.

Every command is a few lines calling ``pinbench.registry`` / ``pinbench.db`` / the evaluator,
and each lives in the module of its group; this module assembles the app (the order below is
the order ``--help`` lists them in) and runs it. A command module imports only Typer, Rich and
pinbench's errors and console at its top; the library a command calls is imported when the
command runs, so that ``--help``, ``--version`` or ``range`` never load SQLAlchemy or NumPy and
a read command never loads the evaluator (``tests/test_cli_imports.py``).

Errors are turned into a message and an exit code in one place (``main``): 0 success, 1 user
error (bad input, not found, conflict), 2 usage error, 3 failure of the system.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from pinbench.cli import (
    accounts,
    attest,
    catalog,
    cluster,
    db,
    images,
    lockfile,
    manifest,
    ops,
    registry,
    run_outputs,
    runs,
    serve,
)
from pinbench.cli.bisect import bisect_cmd
from pinbench.cli.mlmodelscope import import_mlmodelscope
from pinbench.console import err as _err
from pinbench.errors import PinbenchError

__all__ = ["app", "main"]

app = typer.Typer(
    name="pinbench",
    help="Reproducible artifact registry and evaluation store for deep-learning benchmarks.\n\n"
    "State lives in PINBENCH_HOME (default ~/.local/share/pinbench); the database is "
    "PINBENCH_DATABASE_URL (default SQLite in the home; PostgreSQL via postgresql+psycopg://).\n\n"
    "With PINBENCH_URL set (and PINBENCH_TOKEN for writes), publish, yank, list, show, resolve, "
    "lock, run and runs list|show|compare talk to that `pinbench serve` instead.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        sys.stdout.write(f"pinbench {version('pinbench')}\n")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print pinbench's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    pass


app.command("import-mlmodelscope")(import_mlmodelscope)
app.command()(db.init)
app.command()(registry.schema)
app.command()(registry.publish)
app.command()(registry.yank)
app.command("list")(registry.list_)
app.command()(registry.show)
app.command("resolve")(registry.resolve_cmd)
app.command("range")(registry.range_cmd)
app.command("lock")(registry.lock_cmd)
app.command()(registry.verify)
app.command("run")(runs.run_cmd)
app.command("rerun")(runs.rerun_cmd)
app.command("bisect")(bisect_cmd)
app.command()(registry.digest)
app.command()(catalog.demo)
app.command("gc")(serve.gc_cmd)
app.command()(serve.serve)
app.add_typer(db.db_app, name="db")
app.add_typer(images.images_app, name="images")
app.add_typer(accounts.user_app, name="user")
app.add_typer(accounts.token_app, name="token")
app.add_typer(runs.runs_app, name="runs")
app.add_typer(catalog.catalog_app, name="catalog")
app.add_typer(lockfile.lockfile_app, name="lockfile")
app.add_typer(manifest.manifest_app, name="manifest")
app.add_typer(cluster.agent_app, name="agent")
app.add_typer(cluster.systems_app, name="systems")
app.add_typer(ops.ops_app, name="ops")
app.add_typer(attest.attest_app, name="attest")
app.add_typer(attest.keys_app, name="keys")
runs.runs_app.command("attest")(attest.runs_attest)
runs.runs_app.command("outputs")(run_outputs.runs_outputs)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the app and map errors to exit codes (usage errors exit 2 inside Typer)."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="pinbench")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except PinbenchError as exc:
        from rich.text import Text

        _err().print(Text.assemble(("error: ", "bold red"), str(exc)))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return 0
