"""The REST API under load: pinbench's resolve and show endpoints against MLflow's
model-registry REST endpoint, with wrk, 64 connections for 30 s each, on loopback.

Per run and per database kind (SQLite, then PostgreSQL on a throwaway server from
``tests/pg.py``):

* pinbench: ``pinbench serve --workers 2`` (one process per core) over the digits catalog,
  then ``GET /api/v1/resolve?spec=model/vision/digits-logreg@^1&spec=framework/onnxruntime@*``
  and ``GET /api/v1/artifacts/model/vision/digits-logreg@1.2.0``, each after a 3 s warm-up;
* baseline: ``mlflow server`` with its defaults (its own venv, ``bench/_load.py``) on the same
  kind of database, one registered model with one version, then
  ``GET /api/2.0/mlflow/model-versions/get?name=...&version=1``, after a 3 s warm-up.

Every measured wrk run must have no non-2xx answer and no socket error. Reported per run:
requests/s and p50/p99 latency (wrk's ``--latency``, with ``--timeout 30s`` so that slow
answers count); ratios within the run: pinbench's requests/s over MLflow's, and MLflow's p99
over pinbench's. Targets: both ratios >= 10.

Run: ``.venv/bin/python -m bench.bench_api --runs 3`` (``--seconds``, ``--no-postgres``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._common import Check, Report, check_runs, command_line, log, machine, parser
from bench._load import (
    DEFAULT_ROOT,
    Backend,
    WrkResult,
    ensure_mlflow_venv,
    measure_mlflow,
    mlflow_version,
    run_wrk,
)
from pinbench import catalog
from tests.apiserver import api_server
from tests.pg import postgres_server

CONNECTIONS = 64
ENDPOINTS = {
    "resolve": "/api/v1/resolve?spec=model/vision/digits-logreg@^1&spec=framework/onnxruntime@*",
    "show": "/api/v1/artifacts/model/vision/digits-logreg@1.2.0",
}
TARGET = 10.0


@contextmanager
def database(kind: Backend, root: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{root / 'pinbench.db'}"
        return
    with postgres_server() as url:
        yield url


def measure_pinbench(kind: Backend, catalog_dir: Path, seconds: int) -> dict[str, WrkResult]:
    with (
        tempfile.TemporaryDirectory(prefix=f"api-{kind}-", dir=DEFAULT_ROOT) as tmp,
        database(kind, Path(tmp)) as url,
        api_server(Path(tmp) / "home", url, "--workers", "2", catalog_dir=catalog_dir) as srv,
    ):
        out = {}
        for name, path in ENDPOINTS.items():
            log(f"pinbench {name} on {kind}: 3 s warm-up, {seconds} s measured")
            run_wrk(srv.url + path, connections=CONNECTIONS, seconds=3)
            out[name] = run_wrk(srv.url + path, connections=CONNECTIONS, seconds=seconds).check()
        return out


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--seconds", type=int, default=30, help="wrk duration per measurement")
    p.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title=f"REST API under wrk ({CONNECTIONS} connections, {args.seconds} s): pinbench "
        "resolve/show vs MLflow model-versions/get",
        command=command_line("bench.bench_api", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    DEFAULT_ROOT.mkdir(parents=True, exist_ok=True)
    venv = ensure_mlflow_venv(DEFAULT_ROOT)
    kinds: list[Backend] = ["sqlite"] if args.no_postgres else ["sqlite", "postgresql"]
    with tempfile.TemporaryDirectory(prefix="api-catalog-", dir=DEFAULT_ROOT) as tmp:
        catalog_dir = Path(tmp)
        catalog.build(catalog_dir, ["digits"])
        for run in range(runs):
            for kind in kinds:
                log(f"run {run + 1}/{runs}, {kind}")
                ours = measure_pinbench(kind, catalog_dir, args.seconds)
                theirs = measure_mlflow(kind, seconds=args.seconds, connections=CONNECTIONS)
                _record(report, kind, ours, theirs)
    for kind in kinds:
        for name in ENDPOINTS:
            for what, metric in (("requests/s", "throughput ratio"), ("p99", "p99 ratio")):
                value = report.metric(f"[{kind}] {name}: {metric}", "x").median
                met = value >= TARGET
                report.checks.append(
                    Check(f"{kind} {name} {what} vs MLflow", value, "x", f">= {TARGET}x", met)
                )
    report.notes.append(f"MLflow {mlflow_version(venv)} with its server defaults")
    report.notes.append("pinbench serve --workers 2; wrk -t2 -c64 --latency on the same machine")
    report.emit(args.json)
    return 0


def _record(report: Report, kind: str, ours: dict[str, WrkResult], theirs: WrkResult) -> None:
    m = report.metric
    line = ", ".join(
        f"{n} {r.requests_per_s:,.0f} req/s p99 {r.p99_ms:,.1f} ms" for n, r in ours.items()
    )
    log(f"{kind}: pinbench {line}; MLflow {theirs.requests_per_s:,.0f} req/s p99 "
        f"{theirs.p99_ms:,.1f} ms")  # fmt: skip
    m(f"[{kind}] MLflow model-versions/get", "req/s", better="higher").values.append(
        theirs.requests_per_s
    )
    m(f"[{kind}] MLflow p50", "ms").values.append(theirs.p50_ms)
    m(f"[{kind}] MLflow p99", "ms").values.append(theirs.p99_ms)
    for name, result in ours.items():
        m(f"[{kind}] pinbench {name}", "req/s", better="higher").values.append(
            result.requests_per_s
        )
        m(f"[{kind}] pinbench {name} p50", "ms").values.append(result.p50_ms)
        m(f"[{kind}] pinbench {name} p99", "ms").values.append(result.p99_ms)
        m(f"[{kind}] {name}: throughput ratio", "x", better="higher").values.append(
            result.requests_per_s / theirs.requests_per_s
        )
        m(f"[{kind}] {name}: p99 ratio", "x", better="higher").values.append(
            theirs.p99_ms / result.p99_ms
        )


if __name__ == "__main__":
    raise SystemExit(main())
