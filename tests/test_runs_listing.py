"""Listing runs at scale (issue 38): filters on the run's own columns (model, framework,
status, system, start time), keyset pages (``after`` = the last run's id), the same through
the Python API on SQLite and PostgreSQL, the CLI, REST and the web UI; a recorded run fills
the columns, and a database upgraded from before them gets them from its lockfiles. The
expected lists are computed here from the rows the test wrote, never from the listing."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

import pinbench
from pinbench.db import migrate
from pinbench.db.models import Run as RunRow
from pinbench.errors import UserError
from pinbench.evaluator.records.run_filter import STATUSES, listing_columns
from pinbench.registry.locking import store_lockfile
from tests.apiserver import Server, api_server
from tests.helpers import Cli

T0 = datetime(2026, 11, 1, tzinfo=UTC)
SYSTEMS = [None, "node-a", "node-b"]


@dataclass(frozen=True)
class Row:
    id: str
    started_at: datetime
    status: str
    system: str | None
    model: str
    model_version: str
    framework: str


def _requests() -> list[dict[str, Any]]:
    """Lockfiles of two models, one in two versions, on three frameworks."""
    reqs = [
        {"model": f"vision/digits-logreg@{v}", "framework": "onnxruntime@*"}
        for v in ("1.0.0", "1.1.0")
    ]
    reqs += [
        {"model": f"vision/digits-cnn-{suffix}@^1", "framework": f"{f}@*"}
        for f, suffix in (("onnxruntime", "onnx"), ("torch", "torch"), ("tensorflow", "keras"))
    ]
    return [{**r, "dataset": "sklearn-digits-test@^1"} for r in reqs]


def _fill(reg: pinbench.Registry, count: int, seed: int) -> list[Row]:
    """``count`` run rows over the catalog's lockfiles, statuses, systems and start times
    (several runs share one start time: the page order must still be total)."""
    rnd = random.Random(seed)
    locks = [lock for req in _requests() for lock in reg.lock(req)]
    ws = reg.workspace()
    rows: list[Row] = []
    with ws.transaction() as session:
        for lock in locks:
            store_lockfile(session, lock.body)
        for i in range(count):
            locked = rnd.choice(locks).body
            cols = listing_columns(locked)
            row = Row(
                id=f"{rnd.getrandbits(128):032x}"[:8] + f"-{i:04d}-4000-8000-{i:012d}",
                started_at=T0 + timedelta(minutes=rnd.randrange(count // 3)),
                status=rnd.choice(STATUSES),
                system=rnd.choice(SYSTEMS),
                model=str(cols["model"]),
                model_version=str(cols["model_version"]),
                framework=str(cols["framework"]),
            )
            session.add(
                RunRow(
                    id=row.id,
                    lockfile_digest=locked.digest.hex,
                    status=row.status,
                    runner="local",
                    started_at=row.started_at,
                    host={},
                    system=row.system,
                    **cols,
                )
            )
            rows.append(row)
    return rows


def _newest_first(rows: list[Row]) -> list[str]:
    return [r.id for r in sorted(rows, key=lambda r: (r.started_at, r.id), reverse=True)]


@contextmanager
def _published(home: Path, database_url: str | None, catalog: Path) -> Iterator[pinbench.Registry]:
    """A registry at ``home`` with the catalog's manifests published."""
    with pinbench.Registry(home=home, database_url=database_url) as registry:
        registry.init()
        for manifest in sorted(catalog.glob("*.yaml")):
            registry.publish(manifest, publisher="test")
        yield registry


@pytest.fixture
def reg(tmp_path: Path, database_url: str, cnn_catalog_dir: Path) -> Iterator[pinbench.Registry]:
    with _published(tmp_path / "home", database_url, cnn_catalog_dir) as registry:
        yield registry


FILTERS: list[tuple[dict[str, str], Any]] = [
    ({}, lambda r: True),
    ({"model": "vision/digits-logreg"}, lambda r: r.model == "vision/digits-logreg"),
    (
        {"model": "vision/digits-logreg@1.0.0"},
        lambda r: r.model == "vision/digits-logreg" and r.model_version == "1.0.0",
    ),
    ({"framework": "torch"}, lambda r: r.framework == "torch"),
    ({"status": "failed"}, lambda r: r.status == "failed"),
    ({"system": "node-a"}, lambda r: r.system == "node-a"),
    (
        {"since": "2026-11-01T00:10:00", "until": "2026-11-01T00:20:00+00:00"},
        lambda r: T0 + timedelta(minutes=10) <= r.started_at < T0 + timedelta(minutes=20),
    ),
    (
        {"framework": "onnxruntime", "status": "succeeded", "system": "node-b"},
        lambda r: r.framework == "onnxruntime" and r.status == "succeeded" and r.system == "node-b",
    ),
    # a zone given is honoured: 01:15+01:00 is 00:15 UTC
    ({"since": "2026-11-01T01:15:00+01:00"}, lambda r: r.started_at >= T0 + timedelta(minutes=15)),
]


@pytest.mark.parametrize(("words", "keep"), FILTERS, ids=[str(w) for w, _ in FILTERS])
def test_every_filter_and_every_page_are_the_rows_it_names_newest_first(
    reg: pinbench.Registry, words: dict[str, str], keep: Any
) -> None:
    rows = _fill(reg, 240, seed=len(words))
    expected = _newest_first([r for r in rows if keep(r)])
    assert expected, "the case must keep some rows"
    seen: list[str] = []
    after: str | None = None
    while True:  # pages of 37: every run once, in order, however the pages fall
        page = [r.id for r in reg.runs(37, after=after, **words)]
        seen += page
        if len(page) < 37:
            break
        after = page[-1]
    assert seen == expected


def test_a_recorded_run_fills_the_columns_the_filters_read(reg: pinbench.Registry) -> None:
    request = {
        "model": "vision/digits-logreg@1.1.0",
        "framework": "onnxruntime@*",
        "dataset": "sklearn-digits-test@^1",
        "scenario": {"name": "SingleStream", "min_query_count": 16},
    }
    (lock,) = reg.lock(request)
    done = lock.run(runner="local")
    assert [r.id for r in reg.runs(model="vision/digits-logreg@1.1.0")] == [done.id]
    assert [r.id for r in reg.runs(framework="onnxruntime", status="succeeded")] == [done.id]
    assert reg.runs(model="vision/digits-logreg@1.0.0") == []
    assert reg.runs(status="failed") == []


@pytest.mark.parametrize(
    ("words", "says"),
    [
        ({"status": "done"}, "status='done': one of queued, running"),
        ({"since": "yesterday"}, "since='yesterday': an ISO 8601 date"),
        ({"model": "x" * 201}, "a name of 1 to 200 characters"),
        ({"framework": "torch@"}, "NAME@VERSION with a version of 1 to 100"),
        ({"system": "Node A"}, "a system's name"),
        ({"since": "2026-11-02", "until": "2026-11-01"}, "must be later than since"),
    ],
)
def test_a_filter_that_cannot_match_what_it_says_is_refused(
    reg: pinbench.Registry, words: dict[str, str], says: str
) -> None:
    with pytest.raises(UserError, match=None) as caught:
        reg.runs(**words)  # type: ignore[arg-type]
    assert says in str(caught.value)


def test_a_database_from_before_the_columns_gets_them_from_its_lockfiles(
    reg: pinbench.Registry,
) -> None:
    rows = _fill(reg, 30, seed=7)
    engine = reg.workspace().engine
    migrate.downgrade(engine, "0010")
    with engine.connect() as conn:
        names = {c["name"] for c in __import__("sqlalchemy").inspect(conn).get_columns("runs")}
    assert "model" not in names
    migrate.upgrade(engine)
    with engine.connect() as conn:
        got = {
            run_id: (model, version, framework)
            for run_id, model, version, framework in conn.execute(
                text("SELECT id, model, model_version, framework FROM runs")
            )
        }
    assert got == {r.id: (r.model, r.model_version, r.framework) for r in rows}
    by_run, _ = _facets(reg)  # and each its facet (migration 0013)
    assert {i: f[:3] + f[4:] for i, f in by_run.items()} == {
        r.id: (r.model, r.model_version, r.framework, r.status, r.system) for r in rows
    }
    words = {"model": "vision/digits-logreg", "status": rows[0].status}
    expected = _newest_first([r for r in rows if _keeps(words, r)])
    assert [r.id for r in reg.runs(None, **words)] == expected


# -- two or more filter columns: the runs of the matching facets (decision 158) ---------------

VALUES: dict[str, list[str]] = {
    # values runs have, and values none has (an unknown model, version, framework, system)
    "model": [
        "vision/digits-logreg",
        "vision/digits-logreg@1.0.0",
        "vision/digits-logreg@1.1.0",
        "vision/digits-logreg@9.9.9",
        "vision/digits-cnn-torch",
        "vision/none",
    ],
    "framework": ["onnxruntime", "torch", "tensorflow", "jax"],
    "status": list(STATUSES),
    "system": ["node-a", "node-b", "node-z"],
}


def _keeps(words: dict[str, str], r: Row) -> bool:
    """Whether a filter keeps a row, computed here from the row's own values."""
    if "since" in words and r.started_at < datetime.fromisoformat(words["since"]):
        return False
    for key, value in words.items():
        name, _, version = value.partition("@")
        if key == "model" and (r.model != name or (version and r.model_version != version)):
            return False
        if key in ("framework", "status", "system") and getattr(r, key) != value:
            return False
    return True


@pytest.mark.parametrize("listed", [10_000, 1], ids=["facet-ids", "facet-subquery"])
def test_any_combination_of_filters_is_the_rows_it_names(
    reg: pinbench.Registry, listed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random combinations of two to four filter columns, values that runs have and values
    none has, some within a start-time window, against the rows the test wrote; pages of 23
    until a short one. The matching facets sent as ids, and (more than ``FACETS_LISTED``) as
    a subquery."""
    from pinbench.evaluator.records import run_list

    monkeypatch.setattr(run_list, "FACETS_LISTED", listed)
    rows = _fill(reg, 300, seed=11)
    rnd = random.Random(2026)
    empty = 0
    for _ in range(40):
        keys = rnd.sample(sorted(VALUES), rnd.randint(2, 4))
        words = {k: rnd.choice(VALUES[k]) for k in keys}
        if rnd.random() < 0.3:
            words["since"] = (T0 + timedelta(minutes=rnd.randrange(50))).isoformat()
        expected = _newest_first([r for r in rows if _keeps(words, r)])
        empty += not expected
        seen: list[str] = []
        after: str | None = None
        while True:
            page = [r.id for r in reg.runs(23, after=after, **words)]
            seen += page
            if len(page) < 23:
                break
            after = page[-1]
        assert seen == expected, words
    assert 0 < empty < 40, "the draw must hold combinations that match and ones that do not"


def _facets(reg: pinbench.Registry) -> tuple[dict[str, tuple[Any, ...]], set[tuple[Any, ...]]]:
    """Each run's facet as the facet row names it, and every facet row."""
    cols = "model, model_version, framework, framework_version, status, system"
    with reg.workspace().engine.connect() as conn:
        facets = {
            fid: tuple(rest)
            for fid, *rest in conn.execute(text(f"SELECT id, {cols} FROM run_facets"))
        }
        runs = conn.execute(text("SELECT id, facet_id FROM runs")).all()
    return {run_id: facets[fid] for run_id, fid in runs}, set(facets.values())


def test_the_database_files_every_run_under_its_facet_when_written_and_when_changed(
    reg: pinbench.Registry,
) -> None:
    from pinbench.db.facets import misfiled

    rows = _fill(reg, 60, seed=3)
    ws = reg.workspace()
    first = (rows[0].model, rows[0].model_version, rows[0].framework)
    was = _facets(reg)[0][rows[0].id]
    with ws.transaction() as session:  # through the ORM, as the run pool changes a status
        run = session.get(RunRow, rows[0].id)
        assert run is not None
        run.status, run.system = "cancelled", "node-b"
        session.add(  # an operator's run: no model
            RunRow(
                id="operator-run",
                lockfile_digest=run.lockfile_digest,
                status="succeeded",
                runner="local",
                started_at=T0,
                host={},
                framework=rows[0].framework,
            )
        )
    with ws.engine.begin() as conn:  # and in plain SQL
        conn.execute(text("UPDATE runs SET system = 'node-a' WHERE id = :id"), {"id": rows[1].id})
    by_run, facets = _facets(reg)
    changed = {rows[0].id: ("cancelled", "node-b"), rows[1].id: (rows[1].status, "node-a")}
    for r in rows:
        status, system = changed.get(r.id, (r.status, r.system))
        assert by_run[r.id] == (
            r.model,
            r.model_version,
            r.framework,
            by_run[r.id][3],
            status,
            system,
        )
    assert by_run["operator-run"] == (None, None, rows[0].framework, None, "succeeded", None)
    assert was in facets  # a combination no run has any more is kept
    with ws.engine.connect() as conn:
        distinct = conn.execute(
            text(
                "SELECT count(*) FROM (SELECT DISTINCT model, model_version, framework,"
                " framework_version, status, system FROM run_facets) AS d"
            )
        ).scalar()
        rows_there = conn.execute(text("SELECT count(*) FROM run_facets")).scalar()
    assert distinct == rows_there == len(facets)  # each combination once
    with ws.reads() as rows_now:
        assert misfiled(rows_now) == ([], 0)
    listed = [r.id for r in reg.runs(None, status="cancelled", system="node-b")]
    assert rows[0].id in listed
    assert "operator-run" in [
        r.id for r in reg.runs(None, framework=rows[0].framework, status="succeeded")
    ]
    assert "operator-run" not in [
        r.id for r in reg.runs(None, model=str(first[0]), status="succeeded")
    ]


def test_a_run_written_over_in_sqlite_keeps_every_run_filed(
    tmp_path: Path, cnn_catalog_dir: Path
) -> None:
    """``INSERT OR REPLACE`` (SQLite's) overrides the conflict clause of the statements in a
    trigger: a facet added with ``INSERT OR IGNORE`` would be deleted and added again under a
    new id, leaving the other runs of its combination filed under nothing."""
    from pinbench.db.facets import misfiled

    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with _published(tmp_path / "home", db, cnn_catalog_dir) as reg:
        ws = reg.workspace()
        rows = _fill(reg, 20, seed=4)
        with ws.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT OR REPLACE INTO runs (id, lockfile_digest, status, runner,"
                    " started_at, host, trace_level, system, model, model_version, framework,"
                    " framework_version) SELECT id, lockfile_digest, status, runner, started_at,"
                    " host, trace_level, system, model, model_version, framework,"
                    " framework_version FROM runs"
                )
            )
            conn.execute(text("UPDATE OR REPLACE runs SET status = 'failed'"))
        with ws.reads() as rows_now:
            assert misfiled(rows_now) == ([], 0)
        words = {"model": rows[0].model, "status": "failed"}
        assert len(reg.runs(None, **words)) == len([r for r in rows if r.model == rows[0].model])


def test_a_combination_no_run_has_answers_without_reading_runs(reg: pinbench.Registry) -> None:
    from sqlalchemy import event

    from pinbench.evaluator.records.run_filter import RunFilter
    from pinbench.evaluator.records.run_list import list_runs

    rows = _fill(reg, 60, seed=5)
    had = {(r.framework, r.system, r.status) for r in rows}
    framework, system, status = next(  # each value some run has, the three together none
        c
        for c in itertools.product(("onnxruntime", "torch"), ("node-a", "node-b"), STATUSES)
        if c not in had
    )
    words = {"framework": framework, "system": system, "status": status}
    assert not [r for r in rows if _keeps(words, r)]
    ws = reg.workspace()
    statements: list[str] = []
    listen = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(ws.engine, "before_cursor_execute", listen)
    try:
        assert list_runs(ws, 100, where=RunFilter.parse(words)) == []
    finally:
        event.remove(ws.engine, "before_cursor_execute", listen)
    assert statements and all("FROM runs" not in s for s in statements), statements


def test_fsck_names_a_run_whose_facet_is_not_its_own(reg: pinbench.Registry) -> None:
    rows = _fill(reg, 10, seed=9)
    assert [p for p in reg.admin().check_store().problems if p.kind == "facet"] == []
    other = next(r for r in rows if (r.status, r.system) != (rows[5].status, rows[5].system))
    with reg.workspace().engine.begin() as conn:  # behind the trigger's back: none, another's
        conn.execute(text("UPDATE runs SET facet_id = NULL WHERE id = :id"), {"id": rows[4].id})
        borrow = "UPDATE runs SET facet_id = (SELECT facet_id FROM runs WHERE id = :o)"
        conn.execute(text(f"{borrow} WHERE id = :id"), {"id": rows[5].id, "o": other.id})
    problems = [p for p in reg.admin().check_store().problems if p.kind == "facet"]
    assert sorted(p.path for p in problems) == sorted(f"runs/{r.id}" for r in rows[4:6])
    assert "would miss it" in problems[0].detail
    from pinbench.db.facets import misfiled

    with reg.workspace().reads() as rows_now:  # fsck names 100 and counts the rest
        assert misfiled(rows_now, limit=1) == ([min(r.id for r in rows[4:6])], 2)
    with reg.workspace().engine.begin() as conn:  # the repair docs/operations.md names
        for r in rows[4:6]:
            conn.execute(text("UPDATE runs SET status = status WHERE id = :id"), {"id": r.id})
    assert [p for p in reg.admin().check_store().problems if p.kind == "facet"] == []


# -- the faces: CLI, REST, web UI ---------------------------------------------------------------


def test_the_cli_filters_and_pages(cli: Cli, tmp_path: Path, cnn_catalog_dir: Path) -> None:
    with _published(tmp_path / "home", None, cnn_catalog_dir) as registry:
        rows = _fill(registry, 120, seed=3)
    expected = _newest_first([r for r in rows if r.framework == "torch"])
    first = cli("runs", "list", "--framework", "torch", "--limit", "10", "--json")
    assert first.code == 0, first.err
    import json

    page = [r["id"] for r in json.loads(first.out)]
    assert page == expected[:10]
    table = cli("runs", "list", "--framework", "torch", "--limit", "10")
    assert f"more runs may follow: add --after {expected[9]}" in table.err
    second = cli("runs", "list", "--framework", "torch", "--after", expected[9], "--json")
    assert [r["id"] for r in json.loads(second.out)] == expected[10:110]
    bad = cli("runs", "list", "--status", "done")
    assert bad.code == 1 and "status='done'" in bad.err and "Traceback" not in bad.err


@pytest.fixture(scope="module")
def filled_server(
    tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path
) -> Iterator[tuple[Server, list[Row]]]:
    root = tmp_path_factory.mktemp("runs-server")
    db = f"sqlite:///{root}/db.sqlite"
    with _published(root / "home", db, cnn_catalog_dir) as registry:
        rows = _fill(registry, 600, seed=11)
    with api_server(root / "home", db) as srv:
        yield srv, rows


def test_rest_filters_pages_and_refuses(filled_server: tuple[Server, list[Row]]) -> None:
    srv, rows = filled_server
    expected = _newest_first([r for r in rows if r.status == "failed"])
    got: list[str] = []
    after: str | None = None
    while True:
        params = {"status": "failed", "limit": "25", **({"after": after} if after else {})}
        answer = httpx.get(f"{srv.url}/api/v1/runs", params=params)
        assert answer.status_code == 200, answer.text
        page = [r["id"] for r in answer.json()]
        got += page
        if len(page) < 25:
            break
        after = page[-1]
    assert got == expected
    everything = httpx.get(f"{srv.url}/api/v1/runs").json()
    assert [r["id"] for r in everything] == _newest_first(rows)[:100]  # the default page
    bad = httpx.get(f"{srv.url}/api/v1/runs", params={"since": "not a date"})
    assert bad.status_code == 400 and "since" in bad.text


def test_the_web_runs_page_filters_and_links_the_older_page(
    filled_server: tuple[Server, list[Row]],
) -> None:
    from pinbench.web.pages import RUNS_PAGE

    srv, rows = filled_server
    assert RUNS_PAGE == 100  # as many as a REST page (decision 158)
    expected = _newest_first([r for r in rows if r.model == "vision/digits-logreg"])
    assert len(expected) > 2 * RUNS_PAGE
    page = httpx.get(f"{srv.url}/ui/runs", params={"model": "vision/digits-logreg"})
    assert page.status_code == 200
    shown = [i for i in expected if f'value="{i}"' in page.text]
    assert shown == expected[:RUNS_PAGE]
    older = f"/ui/runs?model=vision%2Fdigits-logreg&amp;after={expected[RUNS_PAGE - 1]}"
    assert older in page.text
    rest = httpx.get(
        f"{srv.url}/ui/runs",
        params={"model": "vision/digits-logreg", "after": expected[RUNS_PAGE - 1]},
    )
    assert [i for i in expected if f'value="{i}"' in rest.text] == expected[
        RUNS_PAGE : 2 * RUNS_PAGE
    ]


COPIES = 70_000
"""More runs than one statement may bind as parameters: PostgreSQL 65,535 (SQLite: 32,766 by
default, more in some builds, as in this one)."""

BULK_RUNS = """
INSERT INTO runs (id, lockfile_digest, status, runner, started_at, host, trace_level,
                  model, model_version, framework, framework_version)
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :copies)
SELECT 'bulk-' || n.i, r.lockfile_digest, r.status, r.runner, r.started_at, r.host,
       r.trace_level, r.model, r.model_version, r.framework, r.framework_version
FROM runs AS r CROSS JOIN n WHERE r.id = :run
"""
BULK_RESULTS = """
INSERT INTO results (run_id, metric, value, unit)
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :copies)
SELECT 'bulk-' || n.i, x.metric, x.value + n.i, x.unit
FROM results AS x CROSS JOIN n WHERE x.run_id = :run AND x.metric = 'top1'
"""


def test_every_run_at_once_lists_more_runs_than_one_statement_binds(
    tmp_path: Path, pg_server: str, catalog_dir: Path
) -> None:
    """``list_runs`` without a limit (``runs list --all``, retention's and reports' reads)
    reads metrics and lockfiles of every run: in pieces, not one ``IN`` of every id. On
    PostgreSQL, whose limit this SQLite build does not share (the chunks are the same code)."""
    from tests.conftest import _fresh_pg_database

    database_url = _fresh_pg_database(pg_server)
    from pinbench.config import Settings
    from pinbench.evaluator.records.run_list import list_runs
    from pinbench.registry.manifest import load_manifest
    from pinbench.registry.publish import publish
    from pinbench.workspace import Workspace
    from tests.helpers import run_digits

    ws = Workspace(Settings(home=tmp_path / "home", database_url=database_url))
    ws.init()
    try:
        for path in sorted(catalog_dir.glob("*.yaml")):
            publish(ws, load_manifest(path), manifest_dir=catalog_dir, publisher="t")
        first = run_digits(ws)
        with ws.engine.begin() as conn:
            conn.execute(text(BULK_RUNS), {"copies": COPIES, "run": first})
            conn.execute(text(BULK_RESULTS), {"copies": COPIES, "run": first})
            (top1,) = conn.execute(
                text("SELECT value FROM results WHERE run_id = :run AND metric = 'top1'"),
                {"run": first},
            ).one()
        listed = list_runs(ws)
        assert len(listed) == COPIES + 1
        by_id = {row["id"]: row for row in listed}
        for i in (1, 32_767, 65_536, COPIES):  # each reference value computed here, not read back
            assert by_id[f"bulk-{i}"]["top1"] == pytest.approx(top1 + i)
            assert by_id[f"bulk-{i}"]["model"] == by_id[first]["model"]
        assert by_id[first]["top1"] == pytest.approx(top1)
    finally:
        ws.close()


def test_a_run_and_a_series_read_with_plain_sql_on_each_engine(reg: pinbench.Registry) -> None:
    """``runs show`` (``records.run_view``) and ``series show`` (``series.members.collect``,
    ``series.thresholds.thresholds``) read with plain SQL (issue 75, item 3): the same
    statements on SQLite's own driver and on PostgreSQL through SQLAlchemy Core (``window``,
    a word PostgreSQL reserves, quoted), a run found by a prefix of its id, a prefix that
    several ids begin with refused, a threshold's newest version shown."""
    import collections

    import numpy as np

    from pinbench.evaluator.records.run_view import AmbiguousRun, RunNotFound, show_run
    from tests.series_data import latencies, lock, record

    ws = reg.workspace()
    rng = np.random.default_rng(75)
    locked = lock(ws, "1.1.0")
    # 17 runs: two of them begin with the same hex digit, whatever their random ids
    runs = [record(ws, locked, i, latencies(rng, 1_000)) for i in range(17)]
    shown = show_run(ws, runs[1][:13])
    assert shown["id"] == runs[1] and shown["lockfile"] == locked.digest.hex
    assert shown["framework_latency_p50_ns"] > 0 and shown["units"]["throughput_sps"]
    assert shown["started_at"].endswith("+00:00") and shown["host"] == {}
    with pytest.raises(RunNotFound):
        show_run(ws, "0" * 36)
    shared = next(c for c, n in collections.Counter(r[0] for r in runs).items() if n > 1)
    with pytest.raises(AmbiguousRun):
        show_run(ws, shared)
    series = reg.series()
    (name,) = [s["name"] for s in series.list()]
    for max_change in (0.1, 0.2):  # two versions: the newest is shown
        series.set_threshold(
            name, "framework_latency_p50_ns", test="relative", max_change=max_change, by="t"
        )
    info = series.show(name)
    assert [p["run"] for p in info["points"]] == runs
    (threshold,) = info["thresholds"]
    assert (threshold["version"], threshold["max_change"], threshold["window"]) == (2, 0.2, 10)
