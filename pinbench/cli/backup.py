"""``pinbench backup DIR`` and ``pinbench restore DIR`` (decision 149); both call
``Registry.admin()`` on PINBENCH_HOME / PINBENCH_DATABASE_URL, as ``fsck`` does."""

from __future__ import annotations

from pathlib import Path

import click

from pinbench.cli.common import local_registry, progress_lines
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

folder_argument = click.argument("folder", type=click.Path(path_type=Path), metavar="DIR")


@click.command("backup")
@folder_argument
@click.option(
    "--no-blobs",
    "no_blobs",
    is_flag=True,
    default=False,
    help="List the blobs (sha256, size) but leave them out: for an operator who snapshots "
    "the blob filesystem, after this command, themselves.",
)
@json_option
def backup(folder: Path, no_blobs: bool = False, as_json: bool = False) -> None:
    """Back the registry up into DIR (absent or empty): the database, its blobs and the keys.

    The database first (SQLite's backup API, or pg_dump), then every blob it references
    (copies, never hard links: a blob rewritten in the home must not change the backup; with
    the blobs in object storage, read from the bucket), their manifest and the signing keys.

    Every blob, key and the database's file is hashed as it is taken: a blob whose bytes are
    not its name's, or one missing (from the bucket, for blobs in object storage), fails the
    backup (exit 1) and leaves nothing. DIR must be outside the home and the blob store. It is
    as secret as PINBENCH_HOME (it holds the private keys). `pinbench restore DIR` restores
    it into an empty home and database.
    """
    with local_registry() as reg:
        say = progress_lines(quiet=as_json)
        done = reg.admin().backup(folder, blobs=not no_blobs, say=say)
    if as_json:
        _print_json(done.to_json())
        return
    how = (
        f"{done.linked} linked, {done.copied} copied from {done.source}"
        if done.included
        else "not included"
    )
    _out().print(
        f"backed up the {done.database} database (schema {done.revision}) and "
        f"{done.blobs} blobs, {done.bytes:,} bytes ({how}) to {done.folder}"
    )


@click.command("restore")
@folder_argument
@json_option
@click.pass_context
def restore(ctx: click.Context, folder: Path, as_json: bool = False) -> None:
    """Restore a backup made by `pinbench backup` into an empty PINBENCH_HOME and database.

    Every file of the backup is hashed against its manifest first, and the database's
    references against the blobs it holds; a damaged or incomplete backup, a symbolic link or
    a file its manifest does not list, or a target that is not empty, is refused (exit 1)
    before anything is written. Ends by checking the store as `pinbench fsck` does (exit 1 on
    a problem).
    """
    with local_registry() as reg:
        done = reg.admin().restore(folder)
    problems = done.checked.problems
    if as_json:
        _print_json(done.to_json())
    else:
        for p in problems:
            _out().print(f"{p.kind}: {p.path}: {p.detail}")
        if done.unhashed_keys:
            _out().print(
                f"note: keys {', '.join(done.unhashed_keys)} restored unchecked: this format-1 "
                "backup names its keys without a sha256 (a key other than the one the database "
                "records is refused when first used)"
            )
        _out().print(
            f"restored the {done.database} database and {done.blobs} blobs, {done.bytes:,} "
            f"bytes ({done.linked} linked, {done.copied} copied); checked "
            f"{done.checked.blobs} blobs: "
            + (f"{len(problems)} problems" if problems else "no problems")
        )
    if problems:
        ctx.exit(1)
