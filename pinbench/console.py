"""The CLI's output, shared by its command modules: Rich consoles for text (stdout for data,
stderr for progress and notes) and one JSON form (indented, sorted keys, UTF-8 as is). Rich is
imported when a console is first asked for: ``range`` and ``digest`` write plain lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


def json_option(f: F) -> F:
    """``--json`` (``as_json``): print JSON instead of text."""
    import click

    return click.option(
        "--json", "as_json", is_flag=True, default=False, help="Print JSON instead of text."
    )(f)


def out() -> Console:
    """stdout; wide enough for tables when it is not a terminal. Strings print as they are,
    never as Rich markup: they carry data (paths, names, messages) in which ``[red]`` is text
    and ``[/x]`` no closing tag; a style is given as a ``Text``."""
    from rich.console import Console

    width = None if sys.stdout.isatty() else 160
    return Console(soft_wrap=True, highlight=False, markup=False, width=width)


def err() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, highlight=False, markup=False)


def to_stderr(text: str) -> None:
    """A line on stderr as it is (what a message with no style needs: no Rich)."""
    sys.stderr.write(text + "\n")


def styled_stderr() -> bool:
    """Whether Rich would style stderr: a terminal, or colour forced (``FORCE_COLOR``,
    ``TTY_COMPATIBLE``). Elsewhere a line is written as it is, without importing Rich."""
    import os

    forced = bool(os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE"))
    return forced or sys.stderr.isatty()


def dim(text: str) -> None:
    """A progress line on stderr: dim where it is styled, the plain line elsewhere."""
    if not styled_stderr():
        sys.stderr.write(text + "\n")
        return
    from rich.text import Text

    err().print(Text(text, style="dim"))


def json_text(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def print_json(data: Any) -> None:
    sys.stdout.write(json_text(data))


def columns(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A plain-text table: left-aligned columns two spaces apart, a header line first. For
    long listings (Rich measures every cell of its tables, a second per thousand rows)."""
    lines = [list(header), *(list(r) for r in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )
