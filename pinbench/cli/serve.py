"""``pinbench serve``: the REST API; Litestar and uvicorn are imported when it starts
(``pinbench gc``, which reclaims the scratch ``serve`` also reclaims, is in ``cli.store``)."""

from __future__ import annotations

import os

import click

from pinbench import bounds
from pinbench.cli.common import listed, local_registry, serve_consent_options
from pinbench.cli.serve_config import config_option
from pinbench.cli.serve_proxy import proxy_options
from pinbench.console import err as _err
from pinbench.errors import UserError


def bounded(bound: bounds.Bound) -> click.IntRange:
    """An integer option within ``bound`` (refused outside, naming the range)."""
    return click.IntRange(int(bound.low), int(bound.high))


WORKER_HEALTHCHECK_S = 60
"""How long ``serve --workers N`` lets a worker take to answer uvicorn's health check."""


@click.command("serve")
@config_option
@click.option("--host", "host", type=str, default="127.0.0.1", help="Address to listen on.")
@click.option("--port", "port", type=int, default=8000, help="Port to listen on.")
@click.option(
    "--workers",
    "workers",
    type=int,
    default=1,
    help="Server processes (uvicorn workers); runs execute in each.",
)
@click.option(
    "--run-workers", "run_workers", type=int, default=1, help="Runs executed at once per process."
)
@click.option(
    "--run-queue", "run_queue", type=int, default=16, help="Runs that may wait; more are refused."
)
@click.option(
    "--max-upload-mb",
    "max_upload_mb",
    type=int,
    default=2048,
    help="Largest publish upload, in MiB.",
)
@click.option(
    "--private",
    "private",
    is_flag=True,
    default=False,
    help="Reads need a token with the 'read' scope too.",
)
@serve_consent_options
@click.option(
    "--runners",
    "runners",
    type=str,
    default="local,venv,docker",
    help=(
        "Comma-separated runners queued runs may use. A model's own "
        "code (TorchScript ops, SavedModel graphs) runs in the "
        "runner: where publishers are not all trusted, allow only "
        "docker."
    ),
)
@click.option(
    "--allowed-host",
    "allowed_host",
    type=str,
    multiple=True,
    callback=listed,
    help=(
        "A Host name the server answers to besides loopback and "
        "--host (repeat it; *.DOMAIN for subdomains; also "
        "PINBENCH_ALLOWED_HOSTS, comma-separated). Behind a reverse "
        "proxy: the public name the proxy forwards in Host."
    ),
)
@click.option(
    "--cluster",
    "cluster",
    type=str,
    help=(
        "A Ray cluster's address HOST:PORT (or PINBENCH_CLUSTER): "
        "runs submitted `on` systems go to its agents (`pinbench run "
        "LOCK --on all`). Agents download blobs from this server with "
        "the token in PINBENCH_AGENT_TOKEN ('read' scope)."
    ),
)
@click.option(
    "--allow-spread",
    "allow_spread",
    is_flag=True,
    default=False,
    help=(
        "Let a training spread its ranks over several agents "
        "(distributed.systems): their sandboxes keep the agents' network, "
        "which ranks on other machines need. Off: refused before it is queued."
    ),
)
@click.option(
    "--agent-url",
    "agent_url",
    type=str,
    help=("This server's URL as the agents reach it (default: http://HOST:PORT)."),
)
@click.option(
    "--warm",
    "warm",
    is_flag=True,
    default=False,
    help=(
        "Keep one evaluator process per environment (venv, docker) "
        "between runs, its framework imported: saves seconds a run. "
        "Each run records whether it was warm; pickled models always "
        "run cold. Off: every run starts its evaluator afresh."
    ),
)
@click.option(
    "--price-per-hour",
    "price_per_hour",
    type=float,
    help=(
        "What this machine costs, in US dollars per hour: the "
        "server's own runs record it (runs on cluster agents record "
        "the agent's). Default: PINBENCH_PRICE_PER_HOUR, else none."
    ),
)
@click.option(
    "--runs-per-user",
    "runs_per_user",
    type=bounded(bounds.RUNS_PER_USER),
    default=8,
    envvar="PINBENCH_RUNS_PER_USER",
    show_envvar=True,
    help=(
        "Runs one user may have queued or running per server process; "
        "more are refused (429). Waiting runs start round robin across users."
    ),
)
@click.option(
    "--drain-seconds",
    "drain_seconds",
    type=bounded(bounds.DRAIN_S),
    default=30,
    envvar="PINBENCH_DRAIN_S",
    show_envvar=True,
    help=(
        "On SIGTERM: take no new run (503), let running runs finish for up "
        "to this long, then stop (what still runs is interrupted). 0: stop at once."
    ),
)
@click.option(
    "--drain-grace-seconds",
    "drain_grace_seconds",
    type=bounded(bounds.DRAIN_GRACE_S),
    default=10,
    envvar="PINBENCH_DRAIN_GRACE_S",
    show_envvar=True,
    help=(
        "After a drain's runs ended: keep answering for up to this long, until the "
        "clients that were waiting on them have read how they ended. 0: stop at once."
    ),
)
@click.option(
    "--auth-failures",
    "auth_failures",
    type=bounded(bounds.AUTH_FAILURES),
    default=20,
    envvar="PINBENCH_AUTH_FAILURES",
    show_envvar=True,
    help=(
        "Failed authentications one client address, or one token id, may make "
        "in a minute; past it the server answers 429 with Retry-After."
    ),
)
@click.option(
    "--log-level",
    "log_level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    envvar="PINBENCH_LOG_LEVEL",
    help=(
        "Least severe log records written (or PINBENCH_LOG_LEVEL). "
        "info: the access log and events (publishes, failed logins); "
        "debug adds the probes and each token's use."
    ),
)
@click.option(
    "--log-format",
    "log_format",
    type=click.Choice(["text", "json"]),
    default="text",
    envvar="PINBENCH_LOG_FORMAT",
    help="Logs as text lines or JSON lines (or PINBENCH_LOG_FORMAT).",
)
@click.option(
    "--ready-min-free-mb",
    "ready_min_free_mb",
    type=bounded(bounds.READY_MIN_FREE_MB),
    default=512,
    help="Free space (MiB) the blob store's disk needs for /api/v1/ready to answer 200.",
)
@proxy_options
def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    run_workers: int = 1,
    run_queue: int = 16,
    max_upload_mb: int = 2048,
    private: bool = False,
    allow_pickle: bool = False,
    allow_code: bool = False,
    runners: str = "local,venv,docker",
    allowed_host: list[str] | None = None,
    cluster: str | None = None,
    agent_url: str | None = None,
    allow_spread: bool = False,
    warm: bool = False,
    price_per_hour: float | None = None,
    runs_per_user: int = 8,
    drain_seconds: int = 30,
    drain_grace_seconds: int = 10,
    auth_failures: int = 20,
    log_level: str = "info",
    log_format: str = "text",
    ready_min_free_mb: int = 512,
    trust_forwarded_proto: bool = False,
    trust_forwarded_for: bool = False,
) -> None:
    """Serve the REST API (OpenAPI at /schema/openapi.json, docs page at /schema/swagger).

    Reads are public unless --private; publishing needs a token with the 'publish' scope
    whose user is a member of the name's namespace; locking and running need 'run'. Create
    users and tokens with `pinbench user add` and `pinbench token create`.
    """

    from pinbench.api import hosts, logs
    from pinbench.api.outage import NOT_STARTED, STOPPED
    from pinbench.api.server import SETTINGS_ENV, settings_to_env
    from pinbench.energy.price import PRICE_ENV, SOURCE_ENV, parse_price, price_from_env
    from pinbench.evaluator.instances import lease_from_env
    from pinbench.evaluator.runners import RUNNERS, UnknownRunner

    if price_per_hour is not None:  # the worker processes read it from the environment
        parse_price(price_per_hour, "--price-per-hour")
        os.environ[PRICE_ENV] = repr(price_per_hour)
        os.environ[SOURCE_ENV] = "serve --price-per-hour"
    else:
        price_from_env()  # a bad PINBENCH_PRICE_PER_HOUR is refused before serving
    cluster = cluster or os.environ.get("PINBENCH_CLUSTER") or None
    if cluster is not None:
        import importlib.util

        from pinbench.api.app import AGENT_TOKEN_ENV

        if importlib.util.find_spec("ray") is None:
            raise UserError("serve --cluster needs Ray: pip install 'pinbench[cluster]'")
        token = os.environ.get(AGENT_TOKEN_ENV, "")
        if not token:
            raise UserError(
                f"serve --cluster needs {AGENT_TOKEN_ENV}: a token with the 'read' scope "
                "(pinbench token create --scope read) that agents download blobs with"
            )
        with local_registry() as reg:
            scopes = reg.admin().scopes_of(token)
        if set(scopes) != {"read"}:
            raise UserError(
                f"{AGENT_TOKEN_ENV} must be a token with the 'read' scope only (it is handed "
                f"to every agent over the cluster's network), not {', '.join(sorted(scopes))}"
            )
        if agent_url is None and host in ("0.0.0.0", "::", ""):
            raise UserError(
                f"--host {host!r} is no address an agent can reach: give --agent-url URL"
            )
        agent_url = agent_url or f"http://{f'[{host}]' if ':' in host else host}:{port}"
        from pinbench.api.agent_wait import agent_wait_s

        agent_wait_s()  # a bad PINBENCH_STUDY_AGENT_WAIT_S is refused before serving
    lease_from_env()  # a bad PINBENCH_SERVER_LEASE_S is refused before serving
    allowed_hosts = hosts.for_serve(
        host, [*(allowed_host or []), *([agent_host(agent_url)] if cluster else [])]
    )  # the agents reach it by its --agent-url: it answers to that Host
    allowed_runners = tuple(r.strip() for r in runners.split(",") if r.strip())
    for name in allowed_runners or ("",):
        if name not in RUNNERS:  # refused before the server starts
            raise UnknownRunner(runner=name)
    metrics_folder: str | None = None
    with local_registry() as reg:  # never a live server's runs, a live process's scratch
        done, reclaimed = reg.admin().prepare_to_serve(STOPPED, NOT_STARTED)
        if workers > 1 and reg.home is not None:  # the workers share their /metrics numbers
            from pinbench.api.worker_metrics import prepare

            metrics_folder = str(prepare(reg.home))
    for line in done:
        _err().print(line)
    if reclaimed.removed:
        _err().print(reclaimed.summary())
    os.environ[SETTINGS_ENV] = settings_to_env(
        public_read=not private,
        max_upload_bytes=max_upload_mb * 1024 * 1024,
        run_workers=run_workers,
        run_queue=run_queue,
        allow_pickle=allow_pickle,
        allow_code=allow_code,
        runners=allowed_runners,
        allowed_hosts=allowed_hosts,
        cluster=cluster,
        agent_url=agent_url if cluster is not None else None,
        allow_spread=allow_spread,
        warm=warm,
        runs_per_user=runs_per_user,
        drain_s=drain_seconds,
        drain_grace_s=drain_grace_seconds,
        auth_failures=auth_failures,
        log_level=log_level,
        log_format=log_format,
        ready_min_free_mb=ready_min_free_mb,
        trust_forwarded_proto=trust_forwarded_proto,
        trust_forwarded_for=trust_forwarded_for,
        metrics_folder=metrics_folder,
    )
    logs.configure(log_level, log_format)  # uvicorn's own records, in the workers' format
    _err().print(
        f"pinbench serving on http://{host}:{port} (docs: http://{host}:{port}/schema/swagger)"
    )
    _err().print(f"answering to Host {', '.join(allowed_hosts)}")
    from pinbench.api.supervisor import run as run_server

    run_server(
        "pinbench.api.server:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        # uvicorn kills a worker whose health-check thread does not answer in time; runs in
        # a worker (local runner, preprocessing) may hold the GIL for seconds on a busy host
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        log_level="warning",
        log_config=None,  # its records go to the root logger, which logs.configure set up
        access_log=False,  # the app writes its own (pinbench.api.observe)
        proxy_headers=False,  # read by the app (api/server.py): X-Forwarded-* only if trusted
    )


def agent_host(url: str | None) -> str:
    """The host of ``serve --agent-url`` (the server answers to it: its agents send it as
    their requests' Host); a URL that is not http(s) with a host is refused."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url or "")
        scheme, hostname = parts.scheme, parts.hostname
    except ValueError:  # an unbalanced [ of an IPv6 address
        scheme, hostname = "", None
    if scheme not in ("http", "https") or not hostname or "*" in hostname:
        raise UserError(f"--agent-url {url!r} is not an http(s) URL with a host (no wildcard)")
    return hostname
