"""``pinbench import-mlmodelscope FILE.yml``: an MLModelScope model manifest as a pinbench one.

A few lines over ``pinbench.registry.mlmodelscope``; a refusal is an ``MLModelScopeError`` (a
user error: ``pinbench.cli.main`` prints it and exits 1) and nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pinbench.cli.common import force_option
from pinbench.console import print_json


@click.command("import-mlmodelscope")
@click.argument(
    "file", type=click.Path(path_type=Path), help="An MLModelScope model manifest (YAML)."
)
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(path_type=Path),
    help="Write the pinbench manifest here (default: print it).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    default=False,
    help="Print JSON: the manifest, the notes, the file written.",
)
@force_option
def import_mlmodelscope(
    file: Path,
    output: Path | None = None,
    as_json: bool = False,
    force: bool = False,
) -> None:
    """Convert an MLModelScope model manifest into a pinbench model manifest.

    Frameworks and formats are mapped, loose versions (1.0, 1.12) read as text and made semver
    versions and npm ranges, md5 checksums kept beside remote sources (publishing fetches the
    files and fills in their sha256), inputs and outputs made typed steps, container tags kept
    as attributes (they are tags, not digests). What cannot be described is refused, naming
    the field and why (exit 1, nothing written). Notes go to stderr.
    """
    from pinbench.registry.mlmodelscope import import_file
    from pinbench.sdk.files import destination, write

    dest = None if output is None else destination(output, option="-o", force=force)
    imported = import_file(file)
    text = imported.yaml(file.name)
    if dest is not None:
        write(dest, text.encode("utf-8"))
    if as_json:
        notes = [{"field": n.field, "message": n.message} for n in imported.notes]
        written = None if output is None else str(output)
        document = {"manifest": imported.data, "notes": notes, "output": written}
        print_json(document)
        return
    for note in imported.notes:
        sys.stderr.write(f"note: {note}\n")
    if output is None:
        sys.stdout.write(text)
    else:
        manifest = imported.manifest
        sys.stdout.write(
            f"wrote {output}: model/{manifest.name}@{manifest.version} (format "
            f"{manifest.format}, framework {manifest.framework.name} {manifest.framework.range}, "
            f"{len(manifest.files)} files)\n"
        )
