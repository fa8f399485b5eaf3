"""The web UI's pages: browse the registry, view lockfiles, start evaluations, watch runs,
compare them, download reports, see the cluster's systems. Each page is one handler rendering
one template; errors are pages too (the CLI's message, never a stack trace)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Annotated, Any
from urllib.parse import urlencode

import anyio.to_thread
from litestar import Controller, Request, Response, get, post
from litestar.datastructures import Cookie, State
from litestar.enums import RequestEncodingType
from litestar.exceptions import HTTPException
from litestar.params import Body, Parameter
from litestar.response import Redirect, Template

from pinbench import reports
from pinbench.accounts import AuthError, Principal
from pinbench.api.controllers.reports import report_response
from pinbench.api.controllers.systems import alive_systems
from pinbench.api.deps import (
    client_address,
    looked_up,
    principal_for,
    provide_principal,
)
from pinbench.api.problems import ApiNotFound, status_of
from pinbench.api.runpool import RunPool
from pinbench.cluster.systems import list_systems, show_system
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.errors import PinbenchError
from pinbench.evaluator.records.run_list import list_runs
from pinbench.registry import catalog, service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import ArtifactRef, Kind, parse_kind
from pinbench.reports.view import build
from pinbench.run_figures import contended, figures, loadgen_invalid
from pinbench.sdk.hosting import Hosting
from pinbench.web import sessions
from pinbench.web.answers import NEXT_MAX_LENGTH, on_error, page, safe_next
from pinbench.web.forms import MODES, RUNNERS, SCENARIOS, EvaluateForm
from pinbench.web.origin import require_same_origin
from pinbench.web.run_rows import runs_table
from pinbench.web.systems import recent_runs, system_view
from pinbench.workspace import Workspace

UNFINISHED = ("queued", "running")
FORM = Body(media_type=RequestEncodingType.URL_ENCODED)


async def provide_ui_principal(request: Request[Any, Any, Any], state: State) -> Principal:
    """The caller: a bearer token (scripts), else the login session the UI's cookie names
    (``web/sessions.py``), else anonymous."""
    if "authorization" in request.headers:
        return await provide_principal(request, state)
    cookie = request.cookies.get(sessions.COOKIE)
    if not cookie:
        return await principal_for(state, None, client_address(request))
    return await looked_up(
        state,
        client_address(request),
        sessions.session_id_of(cookie),
        lambda rows: sessions.session_principal(rows, cookie),
    )


RUNS_PAGE = 100
"""Runs on one page of /ui/runs, as many as a page of ``GET /api/v1/runs``; "older runs"
pages on (keyset paging, decision 148). It was 200: at a million runs that page answered in
52-56 ms at the 99th percentile, half of it rendering rows (docs/benchmarks.md §13)."""


NAMES_PAGE = 100
"""Names on one page of /ui/artifacts (each with all its versions), as many as runs on a page
of /ui/runs: a registry of 3,203 datasets was one page of 590 KB."""


def _kind_counts(ws: Workspace) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for s in catalog.list_artifacts(ws):
        counts[s.kind] += 1
    return {k.value: counts.get(k.value, 0) for k in Kind}


def _runs_page(ws: Workspace, pool: RunPool, principal: Principal, run_ids: list[str]) -> Template:
    """Runs side by side (one run: its own page, its figures as ``runs show`` prints them),
    each run LoadGen called INVALID named first with its reasons; it refreshes itself while
    any is queued or running, showing each one's latest progress line."""
    principal.require("read")
    report = reports.gather(ws, run_ids)
    waiting = [r.id for r in report.runs if r.info["status"] in UNFINISHED]
    invalid = [r for r in report.runs if loadgen_invalid(r.metrics)]
    return page(
        "compare",
        principal=principal,
        view=build(report),
        figures=figures(report.runs[0].info) if len(report.runs) == 1 else None,
        invalid=[(r.id, figures(r.info).invalid) for r in invalid],
        busy=[(r.id, figures(r.info).busy) for r in report.runs if contended(r.metrics)],
        waiting=waiting,
        progress={r: pool.progress.get(r, "") for r in waiting},
        query=urlencode([("run", r) for r in report.ids]),
        formats=list(reports.FORMATS),
    )


class WebController(Controller):
    path = "/ui"
    include_in_schema = False
    dependencies = {"principal": provide_ui_principal}  # noqa: RUF012
    # Every layer's handlers are merged: the app's (problem+json) for PinbenchError and
    # HTTPException would win over a page for Exception alone.
    exception_handlers = {PinbenchError: on_error, HTTPException: on_error, Exception: on_error}  # noqa: RUF012

    @get("/", sync_to_thread=True)
    def home(self, ws: Workspace, principal: Principal) -> Template:
        principal.require("read")
        return page(
            "home",
            principal=principal,
            kinds=_kind_counts(ws),
            table=runs_table(list_runs(ws, 10, nested=True)),
        )

    # ------------------------------------------------------------------ registry

    @get("/artifacts", sync_to_thread=True)
    def artifacts(
        self,
        ws: Workspace,
        principal: Principal,
        kind: str | None = None,
        q: Annotated[str | None, Parameter(max_length=200)] = None,
        after: Annotated[str | None, Parameter(max_length=220)] = None,
    ) -> Template:
        """Published names, ``NAMES_PAGE`` a page with every version of each; "more names"
        pages on (keyset, as the runs page does)."""
        principal.require("read")
        chosen = parse_kind(kind) if kind else None
        found = catalog.name_page(ws, chosen, q, after, NAMES_PAGE)
        given = {k: v for k, v in (("kind", kind), ("q", q)) if v}
        more = found.next_after
        return page(
            "artifacts",
            principal=principal,
            kind=chosen.value if chosen else "",
            q=q or "",
            kinds=[k.value for k in Kind],
            names=[((k, n), versions) for k, n, versions in found.names],
            first=f"/ui/artifacts?{urlencode(given)}" if after else None,
            more=f"/ui/artifacts?{urlencode({**given, 'after': more})}" if more else None,
        )

    @get("/artifacts/{ref:path}", sync_to_thread=True)
    def artifact(self, ws: Workspace, principal: Principal, ref: str) -> Template:
        principal.require("read")
        detail = catalog.show(ws, ArtifactRef.parse(ref.lstrip("/")))
        manifest = json.dumps(detail["manifest"], indent=2, sort_keys=True)
        return page("artifact", principal=principal, a=detail, manifest=manifest)

    @get("/lockfiles/{digest:str}", sync_to_thread=True)
    def lockfile(self, ws: Workspace, principal: Principal, digest: str) -> Template:
        principal.require("read")
        with ws.transaction() as session:
            row = session.get(LockfileRow, digest.removeprefix("sha256:"))
            if row is None:
                raise ApiNotFound(f"no lockfile {digest} is stored here")
            lock = Lockfile.from_bytes(row.body.encode(), source=f"lockfile {digest[:12]}")
        return page(
            "lockfile",
            principal=principal,
            digest=lock.digest.hex,
            body=lock.body,
            text=json.dumps(lock.to_json(), indent=2, sort_keys=True),
        )

    # ------------------------------------------------------------------ evaluate

    @get("/evaluate", sync_to_thread=True)
    def evaluate_form(self, ws: Workspace, principal: Principal) -> Template:
        principal.require("read")
        return self._evaluate(ws, principal, EvaluateForm())

    def _evaluate(
        self,
        ws: Workspace,
        principal: Principal,
        form: EvaluateForm,
        resolved: list[dict[str, Any]] | None = None,
        status: int = 200,
    ) -> Template:
        names: dict[str, set[str]] = defaultdict(set)
        for s in catalog.list_artifacts(ws):
            if not s.yanked:
                names[s.kind].add(s.name)
        return page(
            "evaluate",
            status,
            principal=principal,
            form=form,
            resolved=resolved,
            names={k: sorted(v) for k, v in names.items()},
            scenarios=SCENARIOS,
            modes=MODES,
            runners=RUNNERS,
        )

    @post("/evaluate", sync_to_thread=True, status_code=200)
    def evaluate(
        self,
        request: Request[Any, Any, Any],
        ws: Workspace,
        pool: RunPool,
        principal: Principal,
        data: Annotated[dict[str, str], FORM],
    ) -> Template | Redirect:
        """``action=resolve`` shows what each model line resolves to; ``action=run`` locks
        each (one lockfile per batch size) and queues the runs, then shows them together."""
        require_same_origin(request)
        principal.require("read")
        form = EvaluateForm.from_fields(data)
        try:
            requests = form.requests()
            resolved = []
            for line, req in zip(form.model_lines(), requests, strict=True):
                resolution = catalog.resolve_specs(ws, req.specs(), platform=req.system.key())
                refs = [f"{r.kind.value}/{r.name}@{r.version}" for r in resolution.refs]
                resolved.append({"model": line, "refs": refs, "points": req.batch_sizes()})
        except PinbenchError as exc:
            form.errors.append(str(exc))
            return self._evaluate(ws, principal, form, status=status_of(exc))
        if data.get("action") != "run":
            return self._evaluate(ws, principal, form, resolved)
        principal.require("run")
        run_ids = [
            pool.submit(lock, form.runner, user=principal.user)
            for req in requests
            for lock, _ in service.lock_points(ws, req)
        ]
        return Redirect(f"/ui/compare?{urlencode([('run', r) for r in run_ids])}")

    # ------------------------------------------------------------------ runs

    @get("/runs", sync_to_thread=True)
    def runs(
        self,
        hosted: Hosting,
        principal: Principal,
        model: Annotated[str | None, Parameter(max_length=401)] = None,
        framework: Annotated[str | None, Parameter(max_length=401)] = None,
        status: Annotated[str | None, Parameter(max_length=16)] = None,
        system: Annotated[str | None, Parameter(max_length=63)] = None,
        since: Annotated[str | None, Parameter(max_length=40)] = None,
        until: Annotated[str | None, Parameter(max_length=40)] = None,
        after: Annotated[str | None, Parameter(max_length=36)] = None,
    ) -> Template:
        principal.require("read")
        where = {
            "model": model,
            "framework": framework,
            "status": status,
            "system": system,
            "since": since,
            "until": until,
        }
        runs = hosted.run_views(RUNS_PAGE, where, after)
        given = {k: v for k, v in where.items() if v}
        older = (
            f"/ui/runs?{urlencode({**given, 'after': runs[-1]['id']})}"
            if len(runs) == RUNS_PAGE
            else None
        )
        table = runs_table(runs)
        return page("runs", principal=principal, table=table, where=where, older=older, after=after)

    @get("/runs/{run_id:str}", sync_to_thread=True)
    def run(self, ws: Workspace, pool: RunPool, principal: Principal, run_id: str) -> Template:
        return _runs_page(ws, pool, principal, [run_id])

    @get("/compare", sync_to_thread=True)
    def compare(
        self,
        ws: Workspace,
        pool: RunPool,
        principal: Principal,
        run: Annotated[list[str] | None, Parameter(max_items=reports.data.MAX_RUNS)] = None,
    ) -> Template:
        return _runs_page(ws, pool, principal, run or [])

    @get("/report", sync_to_thread=True)
    def report(
        self,
        hosted: Hosting,
        principal: Principal,
        run: Annotated[list[str] | None, Parameter(max_items=reports.data.MAX_RUNS)] = None,
        format: Annotated[str, Parameter(max_length=16)] = "html",
    ) -> Response[bytes]:
        principal.require("read")
        return report_response(hosted, run or [], fmt=format)

    # ------------------------------------------------------------------ systems

    @get("/systems", sync_to_thread=True)
    def systems(
        self, ws: Workspace, hosted: Hosting, pool: RunPool, principal: Principal
    ) -> Template:
        """Every registered system: its hardware, whether Ray says it is alive (unknown when
        this server has no cluster), the runs it did."""
        principal.require("read")
        rows = list_systems(ws, alive_systems(hosted, pool))
        return page(
            "systems",
            principal=principal,
            systems=[system_view(r) for r in rows],
            cluster=pool.cluster is not None,
        )

    @get("/systems/{name:str}", sync_to_thread=True)
    def system(
        self, ws: Workspace, hosted: Hosting, pool: RunPool, principal: Principal, name: str
    ) -> Template:
        """One system: every fact its agent reported, and its recent runs."""
        principal.require("read")
        row = show_system(ws, name, alive_systems(hosted, pool))
        return page(
            "system",
            principal=principal,
            s=system_view(row),
            table=runs_table(recent_runs(ws, row.name)),
        )

    # ------------------------------------------------------------------ login

    @get("/login", sync_to_thread=False)
    def login_form(
        self,
        principal: Principal,
        back: Annotated[str | None, Parameter(query="next", max_length=NEXT_MAX_LENGTH)] = None,
    ) -> Template:
        return page("login", principal=principal, error=None, next=safe_next(back))

    @post("/login", status_code=200)
    async def login(
        self,
        request: Request[Any, Any, Any],
        state: State,
        data: Annotated[dict[str, str], FORM],
    ) -> Template | Redirect:
        """Check the token, then start a session for it: the cookie holds the session's id and
        secret, never the token (HttpOnly, SameSite=Strict, path /ui, Secure over https)."""
        require_same_origin(request)
        token = data.get("token", "").strip()
        follow = safe_next(data.get("next"))
        try:
            who = await principal_for(state, token or None, client_address(request))
            if who.token_id is None:
                raise AuthError("paste an API token (pbt_...)")
        except AuthError as exc:
            return page("login", 401, principal=None, error=str(exc), next=follow)
        ws: Workspace = state.ws
        token_id = who.token_id

        def start() -> str:
            with ws.writes() as rows:
                return sessions.open_session(rows, token_id)

        cookie = await anyio.to_thread.run_sync(start)
        response = Redirect(follow or "/ui/")
        response.cookies.append(
            Cookie(
                key=sessions.COOKIE,
                value=cookie,
                path="/ui",
                max_age=sessions.SESSION_S,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
        )
        response.delete_cookie(sessions.LEGACY_COOKIE, path="/ui")
        return response

    @post("/logout", status_code=303, sync_to_thread=True)
    def logout(self, request: Request[Any, Any, Any], ws: Workspace) -> Redirect:
        """End the session (a copy of the cookie stops working too) and drop the cookie."""
        require_same_origin(request)
        cookie = request.cookies.get(sessions.COOKIE)
        if cookie:
            with ws.writes() as rows:
                sessions.close_session(rows, cookie)
        response = Redirect("/ui/")
        response.delete_cookie(sessions.COOKIE, path="/ui")
        response.delete_cookie(sessions.LEGACY_COOKIE, path="/ui")
        return response
