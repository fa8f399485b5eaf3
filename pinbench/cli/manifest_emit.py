"""How ``pinbench manifest`` puts a manifest out (``emit``): printed or written with the
files beside it, each of its top-level fields' comments after its line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.console import err, out, print_json

if TYPE_CHECKING:
    from pinbench.sdk.files import Destination


def emit(
    data: dict[str, Any],
    notes: list[str],
    output: Destination | None,
    as_json: bool,
    beside: dict[Path, bytes] | None = None,
    comments: dict[str, str] | None = None,
) -> None:
    """Print or write the manifest (YAML, as the catalog writes it, each of ``comments``
    beside its top-level field) and the notes, with the files that go ``beside`` it (a
    dataset's file index), each through ``pinbench.sdk.files`` (with ``output``'s --force):
    all made whole first and only then put in place (the files beside first), so a refusal
    leaves every file that was there as it was."""
    import yaml
    from rich.text import Text

    from pinbench.sdk.files import destination, distinct, write_all

    text = commented(yaml.safe_dump(data, sort_keys=False), comments or {})
    force = output is not None and output.force
    writes = [
        (destination(path, option="beside the manifest:", force=force), content)
        for path, content in (beside or {}).items()
    ]
    if output is not None:
        writes.append((output, text.encode("utf-8")))
    distinct([dest for dest, _ in writes])
    write_all(writes)
    console = err()
    for note in notes:
        console.print(Text.assemble(("note: ", "bold yellow"), note))
    if as_json:
        written = output.given if output else None
        print_json({"manifest": data, "notes": notes, "output": written})
    elif output is None:
        sys.stdout.write(text)
    else:
        out().print(Text(f"wrote {output.given}"))


def destination_of(output: Path | None, force: bool) -> Destination | None:
    """``-o FILE`` checked before the manifest is made (None: print it)."""
    from pinbench.sdk.files import destination

    return None if output is None else destination(output, option="-o", force=force)


def commented(text: str, comments: dict[str, str]) -> str:
    """``text`` with ``  # COMMENT`` after the line of each top-level field ``comments``
    names (a scalar's line: the field and its value)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        key, sep, value = line.partition(":")
        if sep and key in comments and value.strip() and not line[:1].isspace():
            lines[i] = f"{line.rstrip()}  # {' '.join(comments[key].split())}\n"
    return "".join(lines)
