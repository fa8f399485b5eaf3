"""Resolve latency on a registry of 100,000 published versions, against a naive resolver.

The registry: 1,000 names with 100 versions each (``0.0.0`` .. ``3.4.4``; about 3% of the
versions yanked), inserted straight into the ``artifacts`` table with one SQLAlchemy bulk
insert (not 100,000 publishes) in a home created by ``Workspace.init()``:

* 200 frameworks ``fw-NNN``; each version has an environment for ``amd64/cpu`` (every tenth one
  also for ``amd64/cuda``), so ``requires`` is ``[{"platform": "amd64/cpu"}, ...]``;
* 400 models ``vision/model-NNN``; model ``i`` depends on framework ``fw-(i mod 200)`` with a
  range that varies by version (``^M.m``, ``~M.m``, ``M.x`` or ``>=M.m <M+1``, same major);
* 400 datasets ``data/set-NNN`` with no dependencies.
``requires`` has exactly the shape ``pinbench.registry.publish.requires_of`` writes.

A request is three specs: a random model with a caret, tilde, x- or comparator range; that
model's framework with a range of the same major (``--conflict-rate``, default 0.1, of the
requests ask a random major instead, which forces backtracking and usually fails); a random
dataset with a caret, tilde or major range. Each run times 500 requests (after 20 warm-up
requests, not counted), parsing the specs included:

* pinbench: ``pinbench.registry.catalog.resolve_specs(ws, specs)`` (one session, one indexed
  query per name, resolvelib with backtracking, the model's framework dependency followed);
* baseline, same database and same engine: a naive resolver that, in one session, fetches every
  version of each requested name and takes ``pinbench.registry.ranges.max_satisfying`` of the
  non-yanked ones per spec (no dependencies, no platforms, no backtracking).
The two alternate request by request. Reported: p50, p90, p99 and max latency in ms (nearest
rank), each the median over the runs; ratio = pinbench p99 / naive p99 in the same run.
Target: pinbench p99 < 20 ms. On SQLite (the default) and, when PostgreSQL's binaries are
installed, on a throwaway PostgreSQL server started by ``tests/pg.py``.

Run: ``.venv/bin/python -m bench.bench_resolve --runs 5`` (``--no-postgres``, ``--json``).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from bench._common import (
    Check,
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    percentile,
    scratch,
)
from pinbench.config import Settings
from pinbench.db.models import Artifact
from pinbench.errors import UserError
from pinbench.registry.catalog import resolve_specs
from pinbench.registry.names import Kind, Spec
from pinbench.registry.ranges import max_satisfying
from pinbench.registry.versions import Version, parse_version
from pinbench.workspace import Workspace

MODELS, FRAMEWORKS, DATASETS = 400, 200, 400
VERSIONS = [f"{a}.{b}.{c}" for a in range(4) for b in range(5) for c in range(5)]  # 100
REQUESTS, WARMUP = 500, 20
TARGET_P99_MS = 20.0
PERCENTILES = (50.0, 90.0, 99.0, 100.0)


def model_name(i: int) -> str:
    return f"vision/model-{i:03d}"


def framework_name(i: int) -> str:
    return f"fw-{i:03d}"


def dataset_name(i: int) -> str:
    return f"data/set-{i:03d}"


def framework_of(model: int) -> int:
    return model % FRAMEWORKS


def model_framework_range(rng: random.Random, version: str) -> str:
    major, minor, _ = version.split(".")
    m = int(minor) % 3
    return rng.choice(
        [f"^{major}.{m}", f"~{major}.{m}", f"{major}.x", f">={major}.{m} <{int(major) + 1}"]
    )


def registry_rows(seed: int = 0) -> list[dict[str, Any]]:
    """The 100,000 rows, as ``publish`` would write them (small manifests)."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    rows: list[dict[str, Any]] = []

    def row(kind: Kind, name: str, version: str, requires: list[dict[str, Any]]) -> None:
        manifest = {"kind": kind.value, "name": name, "version": version}
        yanked = rng.random() < 0.03
        rows.append(
            {
                "kind": kind.value,
                "name": name,
                "namespace": name.split("/", 1)[0] if "/" in name else None,
                "version": version,
                "manifest": manifest,
                "manifest_digest": hashlib.sha256(f"{kind}/{name}@{version}".encode()).hexdigest(),
                "requires": requires,
                "publisher": "bench",
                "published_at": now,
                "yanked": yanked,
                "yank_reason": "bench" if yanked else None,
                "yanked_at": now if yanked else None,
            }
        )

    for i in range(FRAMEWORKS):
        for j, v in enumerate(VERSIONS):
            envs: list[dict[str, Any]] = [{"platform": "amd64/cpu"}]
            if j % 10 == 0:
                envs.append({"platform": "amd64/cuda"})
            row(Kind.FRAMEWORK, framework_name(i), v, envs)
    for i in range(MODELS):
        fw = framework_name(framework_of(i))
        for v in VERSIONS:
            dep = {"kind": "framework", "name": fw, "range": model_framework_range(rng, v)}
            row(Kind.MODEL, model_name(i), v, [dep])
    for i in range(DATASETS):
        for v in VERSIONS:
            row(Kind.DATASET, dataset_name(i), v, [])
    return rows


def build(ws: Workspace) -> tuple[int, float]:
    """Create the schema and insert the rows; return (rows, seconds)."""
    start = time.perf_counter()
    ws.init()
    rows = registry_rows()
    with ws.transaction() as session:
        session.execute(insert(Artifact), rows)
    return len(rows), time.perf_counter() - start


def request_texts(rng: random.Random, conflict_rate: float = 0.1) -> list[str]:
    """One request: model, its framework and a dataset specs, as ``KIND/NAME@RANGE`` texts.

    With probability ``conflict_rate`` the framework range names a random major (often not
    the model's: the resolver must backtrack and usually fails).
    """
    model = rng.randrange(MODELS)
    major, minor, patch = rng.randrange(4), rng.randrange(5), rng.randrange(5)
    model_range = rng.choice(
        [
            f"^{major}.{minor}",
            f"~{major}.{minor}.{patch}",
            f"{major}.x",
            f">={major}.{minor}.0 <{major + 1}.0.0",
        ]
    )
    fw_major = major if rng.random() >= conflict_rate else rng.randrange(4)
    fw_range = rng.choice([f"^{fw_major}", f">={fw_major}.0 <{fw_major + 1}", f"{fw_major}.x"])
    dmajor, dminor = rng.randrange(4), rng.randrange(5)
    data_range = rng.choice([f"^{dmajor}.{dminor}", f"~{dmajor}.{dminor}", f"{dmajor}"])
    return [
        f"model/{model_name(model)}@{model_range}",
        f"framework/{framework_name(framework_of(model))}@{fw_range}",
        f"dataset/{dataset_name(rng.randrange(DATASETS))}@{data_range}",
    ]


Picks = dict[str, str | None]
"""``kind/name`` -> the version picked (None: nothing satisfies / resolution failed)."""


def pinbench_resolve(ws: Workspace, texts: Sequence[str]) -> Picks:
    specs = [Spec.parse(t) for t in texts]
    try:
        resolution = resolve_specs(ws, specs)
    except UserError:
        return {f"{s.kind.value}/{s.name}": None for s in specs}
    return {f"{r.kind.value}/{r.name}": str(r.version) for r in resolution.refs}


def naive_resolve(ws: Workspace, texts: Sequence[str]) -> Picks:
    """Every version of each name, then the highest non-yanked one the spec allows."""
    specs = [Spec.parse(t) for t in texts]
    out: Picks = {}
    with ws.transaction() as session:
        for spec in specs:
            rows = session.execute(
                select(Artifact.version, Artifact.yanked).where(
                    Artifact.kind == spec.kind.value, Artifact.name == spec.name
                )
            ).all()
            versions: list[Version] = [parse_version(v) for v, y in rows if not y]
            best = max_satisfying(versions, spec.range)
            out[f"{spec.kind.value}/{spec.name}"] = None if best is None else str(best)
    return out


@dataclass
class RunResult:
    pinbench_ms: list[float]
    naive_ms: list[float]
    failed_ms: list[float]
    """pinbench's latencies of the requests it found unresolvable (also in pinbench_ms)."""
    resolved_ms: list[float]
    """pinbench's latencies of the requests it resolved (also in pinbench_ms)."""
    agree: int
    compared: int

    @property
    def failed(self) -> int:
        return len(self.failed_ms)


def one_run(ws: Workspace, seed: int, conflict_rate: float) -> RunResult:
    rng = random.Random(seed)
    warm = [request_texts(rng, conflict_rate) for _ in range(WARMUP)]
    requests = [request_texts(rng, conflict_rate) for _ in range(REQUESTS)]
    for texts in warm:
        pinbench_resolve(ws, texts)
        naive_resolve(ws, texts)
    result = RunResult([], [], [], [], 0, 0)
    resolvers: list[tuple[Callable[[Workspace, Sequence[str]], Picks], list[float]]] = [
        (pinbench_resolve, result.pinbench_ms),
        (naive_resolve, result.naive_ms),
    ]
    for i, texts in enumerate(requests):
        picks: list[Picks] = []
        for fn, sink in resolvers if i % 2 == 0 else resolvers[::-1]:
            start = time.perf_counter()
            picked = fn(ws, texts)
            sink.append((time.perf_counter() - start) * 1e3)
            picks.append(picked)
        ours, naive = (picks[0], picks[1]) if i % 2 == 0 else (picks[1], picks[0])
        if all(v is None for v in ours.values()):
            result.failed_ms.append(result.pinbench_ms[-1])
            continue
        result.resolved_ms.append(result.pinbench_ms[-1])
        for key, version in naive.items():
            result.compared += 1
            result.agree += ours.get(key) == version
    return result


@contextmanager
def sqlite_workspace(root: Path) -> Iterator[Workspace]:
    home = root / "home-sqlite"
    ws = Workspace(Settings(home=home, database_url=f"sqlite:///{home / 'pinbench.db'}"))
    try:
        yield ws
    finally:
        ws.close()


@contextmanager
def postgres_workspace(root: Path) -> Iterator[Workspace]:
    from tests.pg import postgres_server

    with postgres_server() as url:
        ws = Workspace(Settings(home=root / "home-pg", database_url=url))
        try:
            yield ws
        finally:
            ws.close()


def measure(
    report: Report,
    label: str,
    ws_factory: Callable[[], AbstractContextManager[Workspace]],
    runs: int,
    conflict_rate: float,
) -> tuple[str, float]:
    with ws_factory() as ws:
        log(f"[{label}] inserting {MODELS + FRAMEWORKS + DATASETS} names x {len(VERSIONS)}")
        count, seconds = build(ws)
        report.metric(f"[{label}] build: {count:,} rows (schema + bulk insert)", "s").values.append(
            seconds
        )
        for run in range(runs):
            log(f"[{label}] run {run + 1}/{runs}: {WARMUP} warm-up + {REQUESTS} requests")
            r = one_run(ws, seed=1000 + run, conflict_rate=conflict_rate)
            for p in PERCENTILES:
                name = "max" if p == 100.0 else f"p{p:g}"
                report.metric(f"[{label}] pinbench resolve_specs {name}", "ms").values.append(
                    percentile(r.pinbench_ms, p)
                )
            for p in PERCENTILES:
                name = "max" if p == 100.0 else f"p{p:g}"
                report.metric(f"[{label}] naive baseline {name}", "ms").values.append(
                    percentile(r.naive_ms, p)
                )
            report.metric(f"[{label}] ratio p99 pinbench / naive", "x").values.append(
                percentile(r.pinbench_ms, 99) / percentile(r.naive_ms, 99)
            )
            report.metric(f"[{label}] pinbench p99, resolved requests only", "ms").values.append(
                percentile(r.resolved_ms, 99)
            )
            if r.failed_ms:
                report.metric(
                    f"[{label}] pinbench p50, unresolvable requests only", "ms"
                ).values.append(percentile(r.failed_ms, 50))
            report.metric(
                f"[{label}] requests found unresolvable (of {REQUESTS})", "count"
            ).values.append(float(r.failed))
            report.metric(
                f"[{label}] specs where pinbench = naive pick", "%", better="higher"
            ).values.append(100.0 * r.agree / max(1, r.compared))
    p99 = report.metric(f"[{label}] pinbench resolve_specs p99", "ms").median
    return label, p99


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--no-postgres", action="store_true", help="SQLite only")
    p.add_argument(
        "--conflict-rate",
        type=float,
        default=0.1,
        help="share of requests whose framework range names a random major (default 0.1)",
    )
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="resolve: latency of model + framework + dataset requests over 100,000 versions",
        command=command_line("bench.bench_resolve", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    results: list[tuple[str, float]] = []
    with scratch(args.tmp, "resolve", keep=args.keep) as root:
        rate = float(args.conflict_rate)
        results.append(measure(report, "sqlite", lambda: sqlite_workspace(root), runs, rate))
        if not args.no_postgres:
            from tests.pg import PostgresUnavailable

            try:
                results.append(
                    measure(report, "postgresql", lambda: postgres_workspace(root), runs, rate)
                )
            except PostgresUnavailable as exc:
                report.notes.append(f"PostgreSQL skipped: {exc}")
    for label, p99 in results:
        report.checks.append(
            Check(
                f"[{label}] pinbench resolve p99",
                p99,
                "ms",
                f"< {TARGET_P99_MS:g} ms",
                p99 < TARGET_P99_MS,
            )
        )
    report.notes += [
        f"each run: {WARMUP} warm-up requests (not timed), then {REQUESTS} timed requests, "
        "pinbench and the naive resolver alternating which goes first; a new random request "
        "set per run (seeds 1000, 1001, ...)",
        "percentiles are nearest-rank over the run's requests; the median over the runs is shown",
        f"--conflict-rate {args.conflict_rate:g}: that share of requests asks for a random "
        "framework major, usually one the model does not support; such a failed resolution "
        "(no set of versions fits) is timed like a success",
        "the naive baseline follows no dependency and never backtracks, so where pinbench must "
        "go below the highest model version to fit the framework, the two picks differ",
        "PostgreSQL: a throwaway server from tests/pg.py (fsync=off, loopback TCP)",
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
