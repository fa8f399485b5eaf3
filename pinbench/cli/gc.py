"""``pinbench gc``: reclaims the scratch ``pinbench serve`` also reclaims when it starts, or
(``--blobs``) the blobs no row references."""

from __future__ import annotations

import click

from pinbench.cli.common import local_registry
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json


@click.command("gc")
@json_option
@click.option(
    "--blobs",
    "blobs",
    is_flag=True,
    default=False,
    help="Collect blobs no row references instead of scratch (a dry run unless --delete).",
)
@click.option(
    "--grace",
    "grace",
    type=str,
    default="1h",
    help="With --blobs: leave blobs stored less than this long ago (30m, 1h, 2d; seconds).",
)
@click.option(
    "--delete",
    "--yes",
    "delete",
    is_flag=True,
    default=False,
    help="With --blobs: remove them (without it, print what would go).",
)
def gc_cmd(
    as_json: bool = False,
    blobs: bool = False,
    grace: str = "1h",
    delete: bool = False,
) -> None:
    """Remove scratch in PINBENCH_HOME/tmp (staged publishes, uploads, fetches, run folders)
    left by processes that died, and print what it reclaimed.

    A live process's scratch is never touched, whichever process or host owns it (each holds
    a lock on its scratch while it lives); `pinbench serve` does the same when it starts.

    With --blobs: the blobs no row references (an upload cut short by a database outage),
    stored longer ago than --grace, listed with their bytes; --delete removes them, under the
    store's write lock, so a publish in flight is never swept.
    """
    if not blobs and (delete or grace != "1h"):
        raise click.UsageError("--grace and --delete go with --blobs")
    if blobs:
        from pinbench.cli.store import collect_blobs

        with local_registry() as reg:
            collect_blobs(reg, grace=grace, delete=delete, as_json=as_json)
        return
    with local_registry() as reg:
        done = reg.admin().reclaim_scratch()
    if as_json:
        _print_json(
            {
                "removed": [{"name": name, "bytes": size} for name, size in done.removed],
                "bytes": done.bytes,
                "kept": done.kept,
            }
        )
        return
    for name, size in done.removed:
        _out().print(f"removed {name} ({size:,} bytes)")
    _out().print(done.summary())
