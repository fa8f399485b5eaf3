"""Runs: submit a stored lockfile to the server's run queue, status and results, compare."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, delete, get, post
from litestar.params import Parameter

from pinbench.accounts import AuthError, Principal
from pinbench.api.code_scope import check_stored_code
from pinbench.api.runpool import RunPool
from pinbench.api.schemas import (
    Comparison,
    DistributedView,
    RunOnRequest,
    RunRequest,
    RunView,
)
from pinbench.sdk.hosting import Hosting

VIEW_FIELDS = set(RunView.__struct_fields__)
_NAMED = "NAME (every version) or NAME@VERSION."
_WHEN = "An ISO 8601 date or date and time (UTC unless it names a zone) a run started at."


def run_view(info: dict[str, Any], *, full: bool) -> RunView:
    """A run as the API shows it (from ``history`` with ``nested=True``): its metrics under
    ``metrics``; host, details and units only for one run (``full``)."""
    fields = {k: v for k, v in info.items() if k in VIEW_FIELDS}
    if fields.get("distributed") is not None:
        fields["distributed"] = msgspec.convert(fields["distributed"], DistributedView)
    if not full:
        fields.update(units=None, host=None, details=None)
    return RunView(**fields)


UNSTORED = (
    ": POST a request to /api/v1/lockfiles or PUT the lockfile to /api/v1/lockfiles/{digest} first"
)


class RunController(Controller):
    path = "/api/v1/runs"
    tags = ["runs"]  # noqa: RUF012

    @post(
        "/",
        sync_to_thread=True,
        status_code=202,
        summary="Queue a run of a stored lockfile",
        description="Needs the `run` scope (and, for a chain stage's inline code, code the "
        "registry did not publish, the `publish` scope in the namespace of the stage's model: "
        "403 otherwise, nothing queued). The run is recorded `queued` at once; poll "
        "GET /api/v1/runs/{id} until its status is succeeded, failed or interrupted.",
    )
    def submit(
        self, hosted: Hosting, pool: RunPool, principal: Principal, data: RunRequest
    ) -> RunView:
        principal.require("run")
        lock = hosted.stored_lockfile(data.lockfile, hint=UNSTORED)
        check_stored_code(principal, lock)  # before the runner is chosen: nothing queued
        run_id = pool.submit(lock, data.runner, data.trace, user=principal.user)
        return run_view(hosted.run_view(run_id), full=False)

    @post(
        "/on",
        sync_to_thread=True,
        status_code=202,
        summary="Queue runs of a stored lockfile on cluster systems",
        description="Needs the `run` scope (inline chain code as for POST /api/v1/runs) and a "
        "server started with `--cluster`. One run per "
        "system named in `on` (or every live system meeting the lockfile's placement: "
        '`["all"]`); none is queued unless every named system meets it.',
    )
    def submit_on(
        self, hosted: Hosting, pool: RunPool, principal: Principal, data: RunOnRequest
    ) -> list[RunView]:
        principal.require("run")
        lock = hosted.stored_lockfile(data.lockfile, hint=UNSTORED)
        check_stored_code(principal, lock)
        ids = pool.submit_on(
            lock, data.runner, data.trace, data.on, user=principal.user, retries=data.retries
        )
        return [run_view(hosted.run_view(run_id), full=False) for run_id in ids]

    @get(
        "/",
        sync_to_thread=True,
        summary="Recorded runs, newest first",
        description="A page of at most `limit` runs (100 unless given), newest first, kept by "
        "the filters given (model, framework, status, system, since, until). The next page: "
        "`after` = the last run's id (keyset paging; a page costs the same however many runs "
        "there are). An unknown status or an unreadable date is refused with 400.",
    )
    def list_runs(
        self,
        hosted: Hosting,
        principal: Principal,
        limit: Annotated[int, Parameter(ge=1, le=10_000)] = 100,
        model: Annotated[str | None, Parameter(max_length=401, description=_NAMED)] = None,
        framework: Annotated[str | None, Parameter(max_length=401, description=_NAMED)] = None,
        status: Annotated[str | None, Parameter(max_length=16)] = None,
        system: Annotated[str | None, Parameter(max_length=63)] = None,
        since: Annotated[str | None, Parameter(max_length=40, description=_WHEN)] = None,
        until: Annotated[str | None, Parameter(max_length=40, description=_WHEN)] = None,
        after: Annotated[
            str | None,
            Parameter(
                max_length=36,
                description="The next page: the runs listed after this run (its id or prefix).",
            ),
        ] = None,
    ) -> list[RunView]:
        principal.require("read")
        where = {
            "model": model,
            "framework": framework,
            "status": status,
            "system": system,
            "since": since,
            "until": until,
        }
        return [run_view(r, full=False) for r in hosted.run_views(limit, where, after)]

    @get("/{run_id:str}", sync_to_thread=True, summary="One run: status, metrics, host, details")
    def show(self, hosted: Hosting, pool: RunPool, principal: Principal, run_id: str) -> RunView:
        principal.require("read")
        view = run_view(hosted.run_view(run_id), full=True)
        if view.status == "running":
            from pinbench.api import progress

            said = progress.latest(pool.ws.settings.home, view.id)
            view = msgspec.structs.replace(view, progress=said)
        finished = view.status not in ("queued", "running")
        pool.watchers.saw(view.id, finished=finished)  # a drain lets its client read the end
        return view

    @delete(
        "/{run_id:str}",
        sync_to_thread=True,
        status_code=202,
        summary="Cancel a queued or running run",
        description="Needs the `run` scope, and the run must have been submitted with the "
        "caller's token's user (admins may cancel any). A queued run is recorded `cancelled` "
        "at once and never starts; a running one is stopped by its server (its child process "
        "or container killed) and recorded `cancelled`: poll GET /api/v1/runs/{id}. A finished "
        "run is refused with 409.",
    )
    def cancel(self, hosted: Hosting, pool: RunPool, principal: Principal, run_id: str) -> RunView:
        principal.require("run")
        if principal.user is None:  # the run scope is never anonymous; never the operator's
            raise AuthError("cancelling a run needs a token (Authorization: Bearer)")
        admin = principal.is_admin and "admin" in principal.scopes
        full_id, status, reason = hosted.cancel(run_id, user=principal.user, admin=admin)
        if status == "running":
            pool.stop_run(full_id, reason)  # at once if it runs here; else its heartbeat
        return run_view(hosted.run_view(full_id), full=False)


class CompareController(Controller):
    path = "/api/v1/compare"
    tags = ["runs"]  # noqa: RUF012

    @get("/", sync_to_thread=True, summary="Runs side by side; what differs is named")
    def compare(
        self,
        hosted: Hosting,
        principal: Principal,
        run: Annotated[list[str], Parameter(min_items=2, max_items=32)],
    ) -> Comparison:
        principal.require("read")
        data = hosted.compare(run)
        return Comparison(runs=data["runs"], differs=data["differs"], metrics=data["metrics"])
