"""The web UI's study pages: every study, and one study's matrix with its analyses' plots
(the same body as ``pinbench study report``'s page, its runs and lockfiles linked)."""

from __future__ import annotations

from litestar import Controller, get
from litestar.exceptions import HTTPException
from litestar.response import Template

from pinbench.accounts import Principal
from pinbench.errors import PinbenchError
from pinbench.sdk.registry import Registry
from pinbench.web.answers import on_error, page
from pinbench.web.pages import provide_ui_principal


class StudyPages(Controller):
    path = "/ui/studies"
    include_in_schema = False
    dependencies = {"principal": provide_ui_principal}  # noqa: RUF012
    exception_handlers = {PinbenchError: on_error, HTTPException: on_error, Exception: on_error}  # noqa: RUF012

    @get("/", sync_to_thread=True)
    def studies(self, registry: Registry, principal: Principal) -> Template:
        principal.require("read")
        return page("studies", principal=principal, studies=registry.studies().list())

    @get("/{name:str}", sync_to_thread=True)
    def study(self, registry: Registry, principal: Principal, name: str) -> Template:
        from pinbench.studies.analyses import analyse
        from pinbench.studies.report import charts

        principal.require("read")
        matrix = registry.studies().show(name, files=False)
        found = analyse(matrix)
        return page("study", principal=principal, study=matrix, found=found, charts=charts(found))
