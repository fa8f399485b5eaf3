"""The registry's operations as one small API for the CLI (and later the REST API)."""

from __future__ import annotations

from pinbench.errors import UserError
from pinbench.registry.catalog import SqlCandidateSource
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.locking import build_lockfile, insert_lockfile
from pinbench.registry.request import Request
from pinbench.registry.resolve import resolve
from pinbench.workspace import Workspace


def lock_points(ws: Workspace, request: Request) -> list[tuple[Lockfile, bool]]:
    """Resolve a request once and pin one lockfile per batch size (one unless it is a sweep);
    record them; return each with whether it is new."""
    out = []
    with ws.writes() as rows:  # plain SQL: ``lock`` imports no ORM (issue 75, item 3)
        resolution = resolve(
            request.specs(), SqlCandidateSource(rows), platform=request.system.key()
        )
        for batch_size in request.batch_sizes():
            lockfile = build_lockfile(rows, request, resolution, batch_size)
            if lockfile.body.chain is not None:  # each direct wire against its graph
                from pinbench.registry.chain_signature import check_stored

                check_stored(ws, lockfile)
            out.append((lockfile, insert_lockfile(rows, lockfile)))
    return out


def lock(ws: Workspace, request: Request) -> tuple[Lockfile, bool]:
    """Lock a request for a single batch size; return the lockfile and whether it is new."""
    if request.is_sweep:
        raise UserError("this request is a batch-size sweep: lock it with lock_points")
    return lock_points(ws, request)[0]
