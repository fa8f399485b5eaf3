"""The runs store at a million runs: ``runs list`` with filters and pages, the REST list and the
web UI's runs page on PostgreSQL, against the same queries without the listing indexes.

Set-up (once per run of the script): a throwaway PostgreSQL server (``tests/pg.py``), a home with
the digits catalog published and four of its requests locked (real lockfiles), then
``--rows`` runs (default 1,000,000) written by one ``INSERT ... SELECT generate_series`` each
for runs and their three metrics: start times one second apart with every seventh run sharing
its neighbour's second (ties), four finished statuses (a starting server marks the queued and
running runs of servers no longer alive interrupted, as it should: a million of those is not a
runs store, it is an outage), three systems, the four lockfiles in turn; then ``ANALYZE``.

Measured, per query shape (the newest page; a model; a model at a version; a framework; a
status; a system; a one-day window; model + status + system; a combination 50 runs have
(``RARE``) and one no run has, which without facets read the first filter's whole index range;
the 50th page by ``after``):

* the library's listing (``run_list.list_runs``: what the CLI's ``runs list`` and the REST
  handler call), ``--queries`` times, p50 and p99 in ms;
* ``GET /api/v1/runs`` and ``GET /ui/runs`` (a page of 100 rendered) through a real
  ``pinbench serve``, one request at a time, p50 and p99;
* decision 158's baseline: the filters of two or more columns (model@version, model + status +
  system, rare, no match) the way decision 148 read them, every condition on the run's own
  columns (the first filter's index range, the others checked per row), ``--queries`` times;
* the baseline: the same library calls with the six listing indexes dropped (what main had
  before issue 38: no index to read a page off), ``--baseline-queries`` times each; the ratio
  is baseline p50 over indexed p50, both from the same run.

Target (issue 38): p99 < 50 ms for the filtered list and the web page at 1,000,000 runs.
Run: ``.venv/bin/python -m bench.bench_runs --runs 3`` (``--rows``, ``--queries``, ``--json``).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._common import (
    Check,
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    percentile,
)

TARGET_MS = 50.0
PAGE = 100
INDEX_COLUMNS = {
    "ix_runs_started": ("started_at", "id"),
    "ix_runs_model_started": ("model", "started_at", "id"),
    "ix_runs_framework_started": ("framework", "started_at", "id"),
    "ix_runs_status_started": ("status", "started_at", "id"),
    "ix_runs_system_started": ("system", "started_at", "id"),
    "ix_runs_facet_started": ("facet_id", "started_at", "id"),
}
"""The listing's indexes as migrations 0011 and 0013 make them."""
INDEXES = tuple(INDEX_COLUMNS)
REQUESTS = [
    {"model": f"vision/digits-logreg@{v}", "framework": "onnxruntime@*"}
    for v in ("1.0.0", "1.1.0", "1.2.0", "2.0.0-rc.1")
]

FILL_RUNS = """
INSERT INTO runs (id, lockfile_digest, status, runner, started_at, host, trace_level, system,
                  model, model_version, framework, framework_version)
SELECT md5(i::text)::uuid::text,
       l.digest,
       (ARRAY['succeeded','failed','succeeded','cancelled','succeeded','interrupted'])[1 + i % 6],
       'local',
       TIMESTAMPTZ '2026-01-01 00:00:00+00' + make_interval(secs => i - (i % 7 = 0)::int),
       '{}'::json,
       'none',
       (ARRAY[NULL,'node-a','node-b'])[1 + i % 3],
       l.model, l.model_version, l.framework, l.framework_version
FROM generate_series(1, :rows) AS i
JOIN pb_locks AS l ON l.n = i % :locks
"""
RARE = """
UPDATE runs SET status = 'cancelled', system = 'node-b'
WHERE id IN (SELECT md5(i::text)::uuid::text FROM generate_series(1, :rows, :rows / 50) AS i)
"""
"""50 runs spread over the table made the only cancelled runs on node-b (their facet is set
by the trigger, as a status change in service sets it)."""
FILL_RESULTS = """
INSERT INTO results (run_id, metric, value, unit)
SELECT md5(i::text)::uuid::text, m.metric, m.value * (1 + (i % 100) / 1000.0), m.unit
FROM generate_series(1, :rows) AS i
CROSS JOIN (VALUES ('latency_p50_ns', 42000.0, 'ns'), ('throughput_sps', 21000.0, 'samples/s'),
                   ('top1', 0.95, 'ratio')) AS m(metric, value, unit)
"""


def shapes(first_page: list[str]) -> dict[str, tuple[dict[str, str], str | None]]:
    """Query shapes: name -> (filter words, after)."""
    return {
        "newest page": ({}, None),
        "model": ({"model": "vision/digits-logreg"}, None),
        "model@version": ({"model": "vision/digits-logreg@1.2.0"}, None),
        "framework": ({"framework": "onnxruntime"}, None),
        "status": ({"status": "failed"}, None),
        "system": ({"system": "node-a"}, None),
        "one day": ({"since": "2026-01-05", "until": "2026-01-06"}, None),
        "model+status+system": (
            {"model": "vision/digits-logreg", "status": "failed", "system": "node-a"},
            None,
        ),
        # a combination 50 runs have among a million (``RARE``), and one that none has
        # (interrupted runs are always on node-b here): filters of two or more columns that
        # each match many runs; without facets both read the first filter's whole range
        "rare (50 runs)": (
            {"model": "vision/digits-logreg", "status": "cancelled", "system": "node-b"},
            None,
        ),
        "no match": (
            {"framework": "onnxruntime", "status": "interrupted", "system": "node-a"},
            None,
        ),
        "50th page (after)": ({}, first_page[-1]),
    }


def fill(ws: Any, rows: int) -> None:
    """The real lockfiles, then ``rows`` runs and their metrics, in SQL."""
    from sqlalchemy import text

    from pinbench.evaluator.records.run_filter import listing_columns
    from pinbench.registry.lockfile import Lockfile

    with ws.engine.begin() as conn:
        bodies = conn.execute(text("SELECT digest, body FROM lockfiles ORDER BY digest")).all()
        conn.execute(
            text(
                "CREATE TEMP TABLE pb_locks (n int, digest text, model text, model_version text,"
                " framework text, framework_version text) ON COMMIT DROP"
            )
        )
        for n, (digest, body) in enumerate(bodies):
            cols = listing_columns(Lockfile.from_bytes(body.encode()))
            conn.execute(
                text(
                    "INSERT INTO pb_locks VALUES (:n, :digest, :model, :model_version,"
                    " :framework, :framework_version)"
                ),
                {"n": n, "digest": digest, **cols},
            )
        started = time.perf_counter()
        for index in INDEXES:  # built once after the rows, not row by row
            conn.execute(text(f"DROP INDEX {index}"))
        conn.execute(text(FILL_RUNS), {"rows": rows, "locks": len(bodies)})
        conn.execute(text(FILL_RESULTS), {"rows": rows})
        conn.execute(text(RARE), {"rows": rows})
        for index, columns in INDEX_COLUMNS.items():
            conn.execute(text(f"CREATE INDEX {index} ON runs ({', '.join(columns)})"))
        took = time.perf_counter() - started
        log(f"{rows:,} runs and {3 * rows:,} results written in {took:.1f} s")
    with ws.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE runs"))
        conn.execute(text("ANALYZE results"))


def timings_ms(call: Callable[[], object], count: int) -> list[float]:
    call()  # one warm-up call: plans and caches
    out = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def one_run(report: Report, catalog_dir: Path, rows: int, queries: int, baseline: int) -> None:
    import httpx
    from sqlalchemy import text

    import pinbench
    from pinbench.evaluator.records.run_filter import RunFilter
    from pinbench.evaluator.records.run_list import equalities, list_runs
    from pinbench.web.pages import RUNS_PAGE
    from tests.apiserver import serve
    from tests.pg import postgres_server

    with tempfile.TemporaryDirectory(prefix="bench-runs-") as tmp, postgres_server() as url:
        home = Path(tmp) / "home"
        with pinbench.Registry(home=home, database_url=url) as reg:
            reg.init()
            for manifest in sorted(catalog_dir.glob("*.yaml")):
                reg.publish(manifest, publisher="bench")
            for req in REQUESTS:
                reg.lock({**req, "dataset": "sklearn-digits-test@^1"})
            ws = reg.workspace()
            fill(ws, rows)
            after = None
            for _ in range(49):  # the 50th page starts after the 49th page's last run
                page = list_runs(ws, PAGE, after=after)
                after = page[-1]["id"]
            cases = shapes([str(after)])

            def library(words: dict[str, str], after: str | None) -> Callable[[], object]:
                where = RunFilter.parse(words)
                return lambda: list_runs(ws, PAGE, where=where, after=after)

            indexed: dict[str, float] = {}
            for name, (words, start) in cases.items():
                got = timings_ms(library(words, start), queries)
                indexed[name] = statistics.median(got)
                _record(report, f"list_runs: {name}", got)
            for name, (words, start) in cases.items():  # decision 158's baseline
                if len(equalities(RunFilter.parse(words))) >= 2:
                    with _without_facets():
                        got = timings_ms(library(words, start), queries)
                    p50 = statistics.median(got)
                    _record(report, f"without facets: {name}", got)
                    report.metric(
                        f"facets' speed-up: {name} (p50 without / with)", "x", better="higher"
                    ).values.append(p50 / indexed[name])
            with serve(home, url) as base, httpx.Client(base_url=base, timeout=60) as client:
                for name in ("newest page", "model", "status", "model+status+system", "no match"):
                    words, _ = cases[name]
                    for face, path, size in (
                        ("REST", "/api/v1/runs", PAGE),
                        ("web", "/ui/runs", RUNS_PAGE),
                    ):
                        params = {**words, **({"limit": str(size)} if face == "REST" else {})}

                        def get(path: str = path, params: dict[str, str] = params) -> None:
                            client.get(path, params=params).raise_for_status()

                        _record(report, f"{face}: {name}", timings_ms(get, queries))
            with ws.engine.begin() as conn:
                for index in INDEXES:
                    conn.execute(text(f"DROP INDEX {index}"))
                conn.execute(text("ANALYZE runs"))
            for name, (words, start) in cases.items():
                got = timings_ms(library(words, start), baseline)
                p50 = statistics.median(got)
                report.metric(f"no indexes: {name} p50", "ms").values.append(p50)
                report.metric(
                    f"speed-up: {name} (p50 without / with)", "x", better="higher"
                ).values.append(p50 / indexed[name])
                log(f"no indexes: {name} p50 {p50:.1f} ms ({p50 / indexed[name]:.0f}x)")


@contextmanager
def _without_facets() -> Iterator[None]:
    """The listing as decision 148 made it: every condition on the run's own columns, so a
    combination reads its first filter's index range and checks the others per row."""
    from pinbench.evaluator.records import run_list
    from pinbench.evaluator.records.run_filter import RunFilter

    def by_columns(
        rows: object, where: RunFilter, conditions: list[str], params: dict[str, object]
    ) -> bool:
        assert where.since is None and where.until is None  # not in the combined shapes
        wanted = run_list.equalities(where)
        conditions.extend(f"{column} = :w_{column}" for column in wanted)
        params.update({f"w_{column}": value for column, value in wanted.items()})
        return True

    from unittest import mock

    with mock.patch.object(run_list, "_matching", by_columns):
        yield


def _record(report: Report, name: str, got: list[float]) -> None:
    p50, p99 = statistics.median(got), percentile(got, 99)
    report.metric(f"{name} p50", "ms").values.append(p50)
    report.metric(f"{name} p99", "ms").values.append(p99)
    log(f"{name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--rows", type=int, default=1_000_000, help="runs in the table")
    p.add_argument("--queries", type=int, default=200, help="timed calls per shape")
    p.add_argument("--baseline-queries", type=int, default=5, help="calls per shape unindexed")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title=f"runs list at {args.rows:,} runs on PostgreSQL: p50/p99 per filter, REST and web",
        command=command_line("bench.bench_runs", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    from pinbench import catalog

    with tempfile.TemporaryDirectory(prefix="bench-runs-catalog-") as tmp:
        catalog_dir = Path(tmp)
        catalog.build(catalog_dir, ["digits"])
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            one_run(report, catalog_dir, args.rows, args.queries, args.baseline_queries)
    for m in list(report.metrics):
        if m.name.endswith(" p99") and not m.name.startswith(("no indexes", "without facets")):
            value = statistics.median(m.values)
            report.checks.append(
                Check(m.name, value, "ms", f"< {TARGET_MS:g} ms", value < TARGET_MS)
            )
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
