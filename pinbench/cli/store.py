"""``pinbench fsck`` (the blob store checked against the rows that reference it) and the
printing of ``pinbench gc --blobs`` (decision 144); both call ``Registry.admin()``."""

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
    """Check the blob store against the database: every blob a row references is present
    and hashes to its name, every blob is referenced, nothing else lies among the blobs,
    and every run's filter facet names its model, framework, status and system.

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
