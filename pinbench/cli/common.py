"""What the command modules share: the registry a command talks to (``pinbench.Registry``, from
the environment), progress on stderr, and the options more than one group takes.

Nothing heavy is imported here: this module is loaded by every command, ``--help`` included.
The registry imports SQLAlchemy or httpx only when a command first asks it for something.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from pinbench.console import err as _err

if TYPE_CHECKING:
    from rich.progress import Progress

    from pinbench.artifacts.digest import Progress as ProgressCallback
    from pinbench.sdk.registry import Registry

PROGRESS_MIN_BYTES = 64 * 1024 * 1024
T = TypeVar("T")


F = TypeVar("F", bound=Callable[..., object])


def allow_pickle_option(f: F) -> F:
    """``--allow-pickle`` (``allow_pickle``)."""
    import click

    return click.option(
        "--allow-pickle",
        "allow_pickle",
        is_flag=True,
        default=False,
        help="This run may unpickle a torch-pickle model whose manifest says `trusted: true` "
        "(unpickling runs the publisher's code: only for publishers you trust).",
    )(f)


def allow_code_option(f: F) -> F:
    """``--allow-code`` (``allow_code``)."""
    import click

    return click.option(
        "--allow-code",
        "allow_code",
        is_flag=True,
        default=False,
        help="This run may execute the model's preprocess/postprocess Python code (the "
        "publisher's code: only for publishers you trust; it runs in the sandbox, see "
        "--sandbox).",
    )(f)


def sandbox_option(f: F) -> F:
    """``--sandbox bwrap|none`` (``sandbox``)."""
    import click

    return click.option(
        "--sandbox",
        "sandbox",
        type=click.Choice(["bwrap", "none"]),
        default="bwrap",
        show_default=True,
        help="Where each evaluator process runs: bwrap, a bubblewrap sandbox that sees only the "
        "model's files and the samples (no home, keys, labels, network or host processes); "
        "none, as your own user (the run is recorded and shown UNSANDBOXED when it ran code or "
        "a model's own operations).",
    )(f)


def serve_consent_options(f: F) -> F:
    """``serve``'s ``--allow-pickle`` and ``--allow-code``: the operator's decisions."""
    import click

    f = click.option(
        "--allow-code",
        "allow_code",
        is_flag=True,
        default=False,
        help="Let models whose manifest carries preprocess/postprocess Python code run it, "
        "in the sandbox of the run's runner, here or on an agent (the publisher's code). Off: "
        "never.",
    )(f)
    return click.option(
        "--allow-pickle",
        "allow_pickle",
        is_flag=True,
        default=False,
        help=(
            "Let models of format torch-pickle whose manifest says "
            "`trusted: true` run, in the sandbox of the run's runner, here or on an agent "
            "(unpickling runs the publisher's code). Off: never."
        ),
    )(f)


def listed(_ctx: object, _param: object, values: tuple[T, ...]) -> list[T] | None:
    """A repeated option's or a variadic argument's values as a list, or None when none were
    given (what the commands were written against)."""
    return list(values) if values else None


@contextmanager
def registry() -> Iterator[Registry]:
    """The registry the environment names (``pinbench.Registry.from_env``): the server of
    PINBENCH_URL, else PINBENCH_HOME; closed afterwards."""
    from pinbench.sdk.registry import Registry

    with Registry.from_env() as reg:
        yield reg


@contextmanager
def local_registry() -> Iterator[Registry]:
    """The registry of PINBENCH_HOME / PINBENCH_DATABASE_URL, PINBENCH_URL or not (for what an
    operator does where the server's database is); closed afterwards."""
    from pinbench.sdk.registry import Registry

    with Registry() as reg:
        yield reg


@contextmanager
def progress_bars() -> Iterator[Callable[[str, int], ProgressCallback]]:
    """A progress bar on stderr for files of 64 MiB or more; small files stay quiet (and Rich's
    progress display is not even imported for them)."""
    started: list[Progress] = []

    def factory(label: str, total: int) -> ProgressCallback:
        if total < PROGRESS_MIN_BYTES:
            return lambda n: None
        if not started:
            started.append(_bar())
            started[0].start()
        bar = started[0]
        task = bar.add_task(f"hashing {label}", total=total)
        return lambda n: bar.advance(task, n)

    try:
        yield factory
    finally:
        for bar in started:
            bar.stop()


def _bar() -> Progress:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TransferSpeedColumn,
    )

    return Progress(
        TextColumn("{task.description}", markup=False),  # a file's name, never markup
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=_err(),
        transient=True,
    )


def progress_lines(*, quiet: bool) -> Callable[[str], None]:
    """Progress messages on stderr; with --json (``quiet``) only notes (``note: ...``: what
    the user should know before the work is done, as a setting that makes a run INVALID)."""
    from pinbench.console import dim

    def notes_only(text: str) -> None:
        if text.startswith("note: "):
            sys.stderr.write(text + "\n")

    return notes_only if quiet else dim


# Arguments and options more than one command module takes.
run_argument = click.argument("run", type=str, help="A run id (or a unique prefix).")

lockfile_argument = click.argument(
    "lockfile", type=click.Path(path_type=Path), help="A lockfile written by `pinbench lock`."
)

publisher_option = click.option(
    "--publisher", "publisher", type=str, help="Who publishes (default: $USER)."
)


FORCE_HELP = "Replace a file it writes that exists (never a folder, a device or a pipe)."

force_option = click.option("--force", "force", is_flag=True, default=False, help=FORCE_HELP)
"""``--force`` (``force``): a command that writes files may replace one that exists
(``pinbench.artifacts.destination``, decision 289)."""


def output_option(help: str) -> Callable[[F], F]:
    """``-o/--output FILE`` (``output``, required): where a command writes what it made, and
    ``--force`` (``force``) to replace it."""
    option = click.option(
        "-o", "--output", "output", type=click.Path(path_type=Path), required=True, help=help
    )
    return lambda f: option(force_option(f))
