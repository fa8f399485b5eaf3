"""``pinbench fsck`` (the blob store checked against the rows that reference it) and
``pinbench gc``: scratch left by dead processes, ``--blobs`` no row references (decision 144),
``--cache``d copies of blobs kept in object storage (decision 210); all call
``Registry.admin()``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pinbench.cli.common import local_registry
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from pinbench.sdk.registry import Registry


@click.command("fsck")
@json_option
@click.pass_context
def fsck(ctx: click.Context, as_json: bool = False) -> None:
    """Check the blob store against the database, and each run's facets against its record.

    Every blob a row references is present and hashes to its name, every blob is referenced,
    nothing else lies among the blobs, and every run's filter facet names its model,
    framework, status and system.

    Reads every blob (the verified-state cache is not trusted); with the blobs in object
    storage, the bucket's bytes as they stream by (no copy is kept), and the multipart
    uploads left incomplete in it are reported too. Prints one line per problem (missing,
    corrupt, unreferenced, stray, upload, facet) and exits 1 when there is any; `pinbench gc
    --blobs` removes unreferenced blobs and aborts stale uploads.
    """
    with local_registry() as reg:
        checked = reg.admin().check_store()
    if as_json:
        _print_json(checked.to_json())
    else:
        for p in checked.problems:
            _out().print(f"{p.kind}: {p.path}: {p.detail}")
        count = len(checked.problems)
        _out().print(
            f"checked {checked.blobs} blobs, {checked.bytes:,} bytes: "
            + (f"{count} problem{'s' if count != 1 else ''}" if count else "no problems")
        )
    if checked.problems:
        ctx.exit(1)


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
@click.option(
    "--cache",
    "cache",
    is_flag=True,
    default=False,
    help="Evict local copies of blobs kept in object storage, least recently used first.",
)
@click.option(
    "--keep",
    "keep",
    type=str,
    default=None,
    help="With --cache: evict down to this size (20G, 500M, 0; default PINBENCH_CACHE_MAX).",
)
def gc_cmd(
    as_json: bool = False,
    blobs: bool = False,
    grace: str = "1h",
    delete: bool = False,
    cache: bool = False,
    keep: str | None = None,
) -> None:
    """Remove the scratch in PINBENCH_HOME/tmp that processes which died left, and print it.

    Scratch is staged publishes, uploads, fetches and run folders; what it reclaimed is
    printed.

    A live process's scratch is never touched, whichever process or host owns it (each holds
    a lock on its scratch while it lives); `pinbench serve` does the same when it starts.

    With --blobs: the blobs no row references (an upload cut short by a database outage),
    stored longer ago than --grace, listed with their bytes; --delete removes them, under the
    store's write lock, so a publish in flight is never swept. With the blobs in object
    storage, multipart uploads left incomplete longer ago than --grace are aborted too.

    With --cache (blobs in object storage, PINBENCH_BLOBS): remove this machine's copies of
    them, least recently used first, until they take at most --keep bytes; copies a running
    run holds stay. The bucket keeps every blob: a copy is downloaded again when read.
    """
    if not blobs and (delete or grace != "1h"):
        raise click.UsageError("--grace and --delete go with --blobs")
    if keep is not None and not cache:
        raise click.UsageError("--keep goes with --cache")
    if cache and blobs:
        raise click.UsageError("--cache and --blobs are separate collections: give one")
    if cache:
        with local_registry() as reg:
            evict_cache(reg, keep=keep, as_json=as_json)
        return
    if blobs:
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


def collect_blobs(reg: Registry, *, grace: str, delete: bool, as_json: bool) -> None:
    """``gc --blobs``: list (or remove, with ``delete``) the unreferenced blobs past ``grace``."""
    done = reg.admin().collect_blobs(grace=grace, delete=delete)
    if as_json:
        _print_json(done.to_json())
        return
    verb = "removed" if delete else "would remove"
    for g in done.garbage:
        _out().print(f"{verb} {g.digest} ({g.size:,} bytes, stored {g.age_s:,.0f} s ago)")
    aborted = "aborted" if delete else "would abort"
    for u in done.uploads:
        _out().print(
            f"{aborted} the incomplete upload of {u.path} ({u.size:,} bytes in parts, begun "
            f"{u.age_s:,.0f} s ago)"
        )
    count = len(done.garbage)
    summary = f"{verb} {count} unreferenced blob{'s' if count != 1 else ''}, {done.bytes:,} bytes"
    _out().print(f"{summary}; left {done.young} younger than the grace period {grace}")
    if done.uploads or done.young_uploads:
        n = len(done.uploads)
        _out().print(
            f"{aborted} {n} incomplete upload{'s' if n != 1 else ''}; left "
            f"{done.young_uploads} younger than the grace period {grace}"
        )
    if not delete and (done.garbage or done.uploads):
        _out().print("dry run: nothing removed; run again with --delete to remove them")


def evict_cache(reg: Registry, *, keep: str | None, as_json: bool) -> None:
    """``gc --cache``: evict local copies of blobs kept in object storage down to ``keep``."""
    done = reg.admin().evict_cache(keep=keep)
    if as_json:
        _print_json(done.to_json())
        return
    _out().print(
        f"evicted {done.removed} local cop{'y' if done.removed == 1 else 'ies'}, "
        f"{done.removed_bytes:,} bytes; kept {done.kept}, {done.kept_bytes:,} bytes "
        f"(limit {done.limit:,} bytes)"
    )
    if done.held:
        _out().print(f"left {done.held} that running runs hold")
