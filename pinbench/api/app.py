"""The Litestar application: controllers, dependencies, errors, OpenAPI and its docs page.

The workspace (database engine, blob store) and the run pool live in the app's lifespan;
each request opens one database session (one transaction) in its handler.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from litestar import Litestar, get
from litestar.contrib.jinja import JinjaTemplateEngine
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.middleware.base import DefineMiddleware
from litestar.openapi.config import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, YamlRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.response import Redirect
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

import pinbench
from pinbench.api import drain, problems
from pinbench.api.cache import ReadCache
from pinbench.api.controllers.accounts import (
    MeController,
    NamespaceController,
    TokenController,
    UserController,
)
from pinbench.api.controllers.artifacts import ArtifactController, YankController
from pinbench.api.controllers.blobs import BlobController
from pinbench.api.controllers.lockfiles import LockfileController, ResolveController
from pinbench.api.controllers.provenance import AttestationController, KeyController
from pinbench.api.controllers.reports import ReportController
from pinbench.api.controllers.runs import CompareController, RunController
from pinbench.api.controllers.series import (
    AlertController,
    GateController,
    SeriesController,
    ThresholdController,
)
from pinbench.api.controllers.studies import StudyController
from pinbench.api.controllers.systems import SystemController
from pinbench.api.deps import (
    ServerSettings,
    provide_cache,
    provide_hosting,
    provide_pool,
    provide_principal,
    provide_registry,
    provide_settings,
    provide_studies,
    provide_ws,
)
from pinbench.api.docs_page import SwaggerPage
from pinbench.api.duplicates import refuse_duplicate_keys
from pinbench.api.headers import add_security_headers
from pinbench.api.hosts import AllowedHosts, HostCheck
from pinbench.api.metrics_auth import ScrapeTokens
from pinbench.api.observe import RequestStats
from pinbench.api.probes import BlobScan, metrics, ready
from pinbench.api.readiness import OneAtATime
from pinbench.api.run_placement import Cluster
from pinbench.api.runpool import RunPool
from pinbench.api.study_runs import STUDIES_GRACE_S, Drivers
from pinbench.api.throttle import WINDOW_S, AuthThrottle
from pinbench.db import schema
from pinbench.db.identity import OpenedFile
from pinbench.errors import PinbenchError, UserError
from pinbench.reports.render import STATIC as SHARED_STATIC
from pinbench.reports.render import templates
from pinbench.sdk.registry import Registry
from pinbench.web.pages import WebController
from pinbench.web.series import SeriesPages
from pinbench.web.studies import StudyPages
from pinbench.workspace import Workspace

STATIC = Path(__file__).parent / "static"
DOCS_PATH = "/schema/swagger"


@get("/", include_in_schema=False)
async def index() -> Redirect:
    return Redirect("/ui/")


@get(
    "/api/v1/health",
    summary="Liveness: the process answers (it checked its database schema at start)",
    description="Cheap: it asks nothing of the database or the disk. Whether the server can "
    "serve is /api/v1/ready.",
)
async def health() -> dict[str, str]:
    return {"status": "ok", "schema": schema.HEAD_REVISION}


def build_decoders() -> None:
    """Build msgspec's information of every type the server converts in worker threads,
    before it accepts a request: each typed decode prepares its type on first use anyway
    (``pinbench.typed``, under a lock: 50 uploads parsing their first manifests in parallel
    once segfaulted a worker in msgspec's annotation resolution), so this only spares the
    first requests the wait."""
    from pinbench import typed
    from pinbench.api.schemas import DistributedView
    from pinbench.registry.lockfile import LockBody
    from pinbench.registry.manifest import MANIFEST_TYPES
    from pinbench.registry.request import Request
    from pinbench.worker.results import ChromeTrace, JobFile, WorkerResult

    kinds = (*MANIFEST_TYPES.values(), Request, LockBody, JobFile, WorkerResult, ChromeTrace)
    for kind in (*kinds, DistributedView):  # the last: a run's view (controllers/runs.py)
        typed.prepared(kind)


AGENT_TOKEN_ENV = "PINBENCH_AGENT_TOKEN"


def cluster_of(settings: ServerSettings) -> Cluster | None:
    """The cluster runs placed on systems go to (``serve --cluster``), with the agents' token
    from ``PINBENCH_AGENT_TOKEN`` (never from the settings, which are an environment dump)."""
    if settings.cluster is None:
        return None
    token = os.environ.get(AGENT_TOKEN_ENV, "")
    if not token or settings.agent_url is None:
        raise UserError(
            f"serve --cluster needs {AGENT_TOKEN_ENV} (a token with the 'read' scope, which "
            "agents download blobs with) and the URL agents reach this server at"
        )
    return Cluster(settings.cluster, settings.agent_url, token, settings.allow_spread)


def create_app(ws: Workspace, settings: ServerSettings | None = None) -> Litestar:
    settings = settings or ServerSettings()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        with ws.transaction():
            pass  # refuse to start on a database whose schema is not current
        app.state.db_file = OpenedFile.of(ws.engine)  # SQLite: readiness checks it stays
        build_decoders()
        from pinbench.api.changes import changes_for

        app.state.cache.changes = changes_for(ws.settings.database_url)
        app.state.pool = RunPool(
            ws,
            workers=settings.run_workers,
            queue=settings.run_queue,
            allow_pickle=settings.allow_pickle,
            allow_code=settings.allow_code,
            runners=tuple(settings.runners),
            cluster=cluster_of(settings),
            warm=settings.warm,
            runs_per_user=settings.runs_per_user,
        )
        app.state.studies = Drivers(app.state.pool)  # studies run on the cluster's agents
        # SIGTERM: finish runs, let their waiting clients read how they ended, then stop
        drain.install(app.state.pool, settings.drain_s, settings.drain_grace_s)
        writer = None
        if settings.metrics_folder is not None:  # --workers N: /metrics sums every worker's
            from pinbench.api.probes import own_numbers
            from pinbench.api.worker_metrics import Writer

            writer = Writer(Path(settings.metrics_folder), lambda: own_numbers(app.state))
            app.state.metrics_writer = writer
            writer.start()
        try:
            yield
        finally:
            if writer is not None:
                writer.stop()
            app.state.pool.close()
            app.state.studies.stop(STUDIES_GRACE_S)  # their threads see the pool closed
            app.state.cache.close()

    openapi = OpenAPIConfig(
        title="pinbench",
        version=getattr(pinbench, "__version__", "0.1.0"),
        description="Registry of versioned artifacts, lockfiles and evaluation runs. Reads are "
        "public unless the server says otherwise; publishing, locking and running need an "
        "API token (`Authorization: Bearer pbt_...`). Errors are RFC 9457 problem details.",
        path="/schema",
        render_plugins=[
            SwaggerPage(static="/static", openapi_json="/schema/openapi.json"),
            JsonRenderPlugin(),
            YamlRenderPlugin(),
        ],
        components=Components(
            security_schemes={
                "token": SecurityScheme(type="http", scheme="bearer", description="pbt_... token")
            }
        ),
        security=[{"token": []}],
    )
    return Litestar(
        route_handlers=[
            index,
            health,
            ready,
            metrics,
            ArtifactController,
            YankController,
            ResolveController,
            LockfileController,
            RunController,
            CompareController,
            SeriesController,
            ThresholdController,
            GateController,
            AlertController,
            StudyController,
            SystemController,
            KeyController,
            AttestationController,
            ReportController,
            BlobController,
            MeController,
            TokenController,
            UserController,
            NamespaceController,
            WebController,
            SeriesPages,
            StudyPages,
            create_static_files_router(path="/static", directories=[STATIC, SHARED_STATIC]),
        ],
        dependencies={
            "ws": Provide(provide_ws, sync_to_thread=False),
            "registry": Provide(provide_registry, sync_to_thread=False),
            "hosted": Provide(provide_hosting, sync_to_thread=False),
            "settings": Provide(provide_settings, sync_to_thread=False),
            "pool": Provide(provide_pool, sync_to_thread=False),
            "studies": Provide(provide_studies, sync_to_thread=False),
            "cache": Provide(provide_cache, sync_to_thread=False),
            "principal": Provide(provide_principal),
        },
        state=State(
            {
                "ws": ws,
                "registry": Registry.over(ws),
                "settings": settings,
                "cache": ReadCache(ws=ws),
                "requests": RequestStats(),
                "blob_scan": BlobScan(),
                "db_ready": OneAtATime(),
                "db_scrape": OneAtATime(),
                "s3_ready": OneAtATime(),
                "scrape_tokens": ScrapeTokens(),
                "db_file": None,
                "throttle": AuthThrottle(failures=settings.auth_failures, window_s=WINDOW_S),
            }
        ),
        lifespan=[lifespan],
        middleware=[DefineMiddleware(HostCheck, allowed=AllowedHosts.of(settings.allowed_hosts))],
        before_request=refuse_duplicate_keys,
        before_send=[add_security_headers],
        exception_handlers={
            PinbenchError: problems.on_pinbench_error,
            HTTPException: problems.on_http_error,
            Exception: problems.on_unexpected,
        },
        openapi_config=openapi,
        template_config=TemplateConfig(engine=JinjaTemplateEngine.from_environment(templates())),
        request_max_body_size=1024 * 1024,
        logging_config=None,  # the process's logging is pinbench.api.logs's (serve --log-*)
    )
