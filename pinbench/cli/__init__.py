"""The ``pinbench`` command: a thin layer over the Python API (``pinbench.sdk``).

The root is a Click group that imports a command's module only when that command runs: the
table below names each command's module, attribute and one-line help, so ``pinbench --help``
lists them all without importing any (``tests/test_cli_contract.py`` checks the table against
the commands themselves). A command module imports Click and pinbench's console and errors at
its top; the library a command calls is imported when the command runs, so that ``--help``,
``--version`` or ``range`` never load SQLAlchemy or NumPy and a read command never loads the
evaluator (``tests/test_cli_imports.py``).

Errors are turned into a message and an exit code in one place (``main``): 0 success, 1 user
error (bad input, not found, conflict), 2 usage error, 3 failure of the system.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module

import click

from pinbench.errors import PinbenchError

__all__ = ["COMMANDS", "app", "main"]

HELP = (
    "Reproducible artifact registry and evaluation store for deep-learning benchmarks.\n\n"
    "State lives in PINBENCH_HOME (default ~/.local/share/pinbench); the database is "
    "PINBENCH_DATABASE_URL (default SQLite in the home; PostgreSQL via postgresql+psycopg://).\n\n"
    "With PINBENCH_URL set (and PINBENCH_TOKEN for writes), publish, yank, list, show, resolve, "
    "lock, run and runs list|show|compare talk to that `pinbench serve` instead."
)

# name -> (module under pinbench.cli, attribute, one-line help), in the order --help lists them.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "import-mlmodelscope": (
        "mlmodelscope",
        "import_mlmodelscope",
        "Convert an MLModelScope model manifest into a pinbench model manifest.",
    ),
    "init": (
        "db",
        "init",
        "Create PINBENCH_HOME: the blob store, the database and this registry's signing keys.",
    ),
    "doctor": (
        "doctor",
        "doctor",
        "What this machine gives pinbench: the sandbox, space, the database, Docker, GPUs, noise.",
    ),
    "schema": ("registry", "schema", "Write the JSON Schema of each manifest kind (for editors)."),
    "publish": (
        "registry",
        "publish",
        "Publish one artifact: validate, hash and store its files, record it.",
    ),
    "yank": (
        "registry",
        "yank",
        "Mark a version yanked: ranges skip it, exact pins still resolve it.",
    ),
    "list": ("registry", "list_", "List published artifacts and versions."),
    "show": (
        "registry",
        "show",
        "Show one artifact version: what it holds, its files with their digests, its yank state.",
    ),
    "resolve": (
        "registry",
        "resolve_cmd",
        "Pick the highest version of each artifact so that every constraint holds.",
    ),
    "range": (
        "registry",
        "range_cmd",
        "Print the given versions that satisfy RANGE, one a line (like node-semver's `semver -r`).",
    ),
    "lock": (
        "registry",
        "lock_cmd",
        "Resolve a request and write its lockfile (canonical JSON; its sha256 is its id).",
    ),
    "verify": (
        "hashing",
        "verify",
        "Check every byte the lockfile pins against its sha256.",
    ),
    "run": (
        "run",
        "run_cmd",
        "Check the lockfile and every byte it pins, run its scenario, and record the run.",
    ),
    "rerun": (
        "run",
        "rerun_cmd",
        "Run a recorded run's lockfile again and print a verdict: inputs, accuracy, latency.",
    ),
    "bisect": (
        "bisect",
        "bisect_cmd",
        "Find the first pin between two runs' lockfiles at which the metric changes.",
    ),
    "series": (
        "series",
        "series_app",
        "Series of runs that measure the same thing (model, dataset, scenario, system): list, "
        "show, thresholds, alerts.",
    ),
    "study": (
        "study",
        "study_app",
        "Studies: models x frameworks x scenarios x systems, one lockfile and run per cell: "
        "run, show, report, rerun.",
    ),
    "gate": (
        "gate",
        "gate_cmd",
        "Judge a candidate against its series' earlier runs under the series' thresholds.",
    ),
    "digest": (
        "hashing",
        "digest",
        "Print the sha256 and size of files (for writing manifests): one `SHA256 SIZE PATH` "
        "line per file.",
    ),
    "demo": (
        "catalog",
        "demo",
        "The whole flow on the built-in catalog: train, publish, resolve, lock, verify, run.",
    ),
    "gc": (
        "store",
        "gc_cmd",
        "Remove the scratch in PINBENCH_HOME/tmp that processes which died left, and print it.",
    ),
    "fsck": (
        "store",
        "fsck",
        "Check the blob store against the database, and each run's facets against its record.",
    ),
    "backup": (
        "backup",
        "backup",
        "Back the registry up into DIR (absent or empty): the database, its blobs and the keys.",
    ),
    "restore": (
        "backup",
        "restore",
        "Restore a backup made by `pinbench backup` into an empty PINBENCH_HOME and database.",
    ),
    "serve": (
        "serve",
        "serve",
        "Serve the REST API (OpenAPI at /schema/openapi.json, docs page at /schema/swagger).",
    ),
    "db": ("db", "db_app", "Database schema migrations."),
    "images": (
        "images",
        "images_app",
        "Framework images for --runner docker: build (and publish), push, pull.",
    ),
    "user": (
        "accounts",
        "user_app",
        "Users and namespace members of this server's database, for admins.",
    ),
    "token": ("accounts", "token_app", "API tokens: create (shown once), list, revoke."),
    "runs": ("runs", "runs_app", "Recorded runs: list, show, compare, parity."),
    "catalog": (
        "catalog",
        "catalog_app",
        "The built-in catalog stage by stage: the DVC pipeline's commands (dvc.yaml).",
    ),
    "lockfile": (
        "lockfile",
        "lockfile_app",
        "Lockfiles made elsewhere: import the artifacts they pin from another registry.",
    ),
    "manifest": (
        "manifest",
        "manifest_app",
        "Write a manifest from files: a model's, a dataset's or a framework's.",
    ),
    "agent": ("cluster", "agent_app", "Join a Ray cluster as an evaluation agent."),
    "systems": (
        "cluster",
        "systems_app",
        "The systems (agents) of the cluster and their hardware.",
    ),
    "ops": (
        "ops",
        "ops_app",
        "Operator benchmarks: one operator timed on each framework on the same inputs.",
    ),
    "attest": (
        "attest",
        "attest_app",
        "Check signed provenance: `attest verify FILE` (see `runs attest`).",
    ),
    "keys": (
        "attest",
        "keys_app",
        "This registry's signing keys: attestation (Ed25519) and model-signing (EC P-256).",
    ),
}


def load(name: str) -> click.Command:
    """The command ``name`` of the root, its module imported now."""
    module, attr, _ = COMMANDS[name]
    found = getattr(import_module(f"pinbench.cli.{module}"), attr)
    assert isinstance(found, click.Command), f"pinbench.cli.{module}.{attr}"
    from pinbench.cli.once import options_once
    from pinbench.cli.summaries import whole_summaries

    return whole_summaries(options_once(found))


class _Root(click.Group):
    """Commands from ``COMMANDS``, each module imported only when its command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load(cmd_name) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from importlib.metadata import version

        sys.stdout.write(f"pinbench {version('pinbench')}\n")
        ctx.exit()


@click.group(
    "pinbench",
    cls=_Root,
    help=HELP,
    no_args_is_help=True,
    context_settings={"help_option_names": ["--help"]},
)
@click.option(
    "--version",
    "show_version",
    is_flag=True,
    default=False,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Print pinbench's version and exit.",
)
def app() -> None:
    pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the app and map errors to exit codes (usage errors exit 2 inside Click). A command
    whose reader went away before its output ended (``pinbench study show NAME | head``) ends
    there quietly with 0: no traceback, no message, what it had left to write dropped."""
    import os
    from typing import TextIO

    def opened(stream: TextIO) -> tuple[int, int] | None:
        """What a stream's descriptor refers to; None where it has none (a test's capture)."""
        try:
            found = os.fstat(stream.fileno())
        except (AttributeError, OSError, ValueError):
            return None
        return found.st_dev, found.st_ino

    stdout, stderr = sys.stdout, sys.stderr
    before = opened(stdout)
    try:
        app.main(args=list(argv) if argv is not None else None, prog_name="pinbench")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except PinbenchError as exc:
        from rich.text import Text

        from pinbench.console import err

        err().print(Text.assemble(("error: ", "bold red"), str(exc)))
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    # A write into a pipe whose reader has gone fails with EPIPE. Rich meets it by pointing
    # stdout at devnull and exiting 1; Click by wrapping sys.stdout and sys.stderr (so that their
    # flushes pass) and exiting 1; what is still buffered fails the flush at exit. Each is the
    # reader's doing, not the command's failure; a stream that still cannot flush is pointed at
    # devnull as Python advises (the signal module's "Note on SIGPIPE"), so nothing fails again.
    cut = sys.stdout is not stdout or sys.stderr is not stderr or opened(stdout) != before
    for stream in (stdout, stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
            cut = True
    return 0 if cut else code
