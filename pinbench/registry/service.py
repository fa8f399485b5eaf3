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
    with ws.reads() as rows:  # plain SQL: ``lock`` imports no ORM (issue 75, item 3)
        resolution = resolve(
            request.specs(), SqlCandidateSource(rows), platform=request.system.key()
        )
        lockfiles = [build_lockfile(rows, request, resolution, b) for b in request.batch_sizes()]
    for lockfile in lockfiles:  # a chain's direct wires against their graphs, read from the
        # store outside any transaction: no database lock waits on the store (decision 305)
        if lockfile.body.chain is not None:
            from pinbench.registry.chain_signature import check_stored

            check_stored(ws, lockfile)
    with ws.writes() as rows:  # each recorded if absent (decision 286)
        return [(lockfile, insert_lockfile(rows, lockfile)) for lockfile in lockfiles]


def lock(ws: Workspace, request: Request) -> tuple[Lockfile, bool]:
    """Lock a request for a single batch size; return the lockfile and whether it is new."""
    if request.is_sweep:
        raise UserError("this request is a batch-size sweep: lock it with lock_points")
    return lock_points(ws, request)[0]
