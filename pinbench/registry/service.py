"""The registry's operations as one small API for the CLI (and later the REST API)."""

from __future__ import annotations

from collections.abc import Iterable

from pinbench.registry.catalog import SqlCandidateSource
from pinbench.registry.lockfile import Lockfile, build_lockfile, store_lockfile
from pinbench.registry.names import Spec
from pinbench.registry.request import Request
from pinbench.registry.resolve import Resolution, resolve
from pinbench.workspace import Workspace


def resolve_specs(
    ws: Workspace, specs: Iterable[Spec], *, platform: str = "amd64/cpu"
) -> Resolution:
    with ws.transaction() as session:
        return resolve(specs, SqlCandidateSource(session), platform=platform)


def lock(ws: Workspace, request: Request) -> tuple[Lockfile, bool]:
    """Resolve a request, pin it, record the lockfile; return it and whether it is new."""
    with ws.transaction() as session:
        resolution = resolve(
            request.specs(), SqlCandidateSource(session), platform=request.system.key()
        )
        lockfile = build_lockfile(session, request, resolution)
        created = store_lockfile(session, lockfile)
    return lockfile, created
