"""The runs listing — ``pinbench runs list``, the API's ``GET /runs``, the web UI's front page —
read with plain SQL (``Workspace.reads``: SQLite's own driver on the embedded database,
SQLAlchemy Core elsewhere; never the ORM), so that ``runs list`` imports no SQLAlchemy on
SQLite (issue 75, item 3).

A filter on one of the facet columns (a model, a framework, a status or a system) reads that
column's index, newest first. Two or more (``model=NAME@VERSION`` counts two: name and
version) look up the combinations of those columns that runs have had (``run_facets``, a small
table the database's trigger keeps) and keep the runs of the combinations that match
(``facet_id IN (...)``): no matching combination answers at once without reading a run, and
PostgreSQL knows from each facet's share of the runs whether to read the few runs of rare
facets and sort them or to scan newest first until the page is full (decisions 148 and 158).
A page goes on from a run by keyset: the runs before it in ``(started_at, id)`` order.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from pinbench.db.chunks import chunked
from pinbench.evaluator.records.run_filter import RunFilter
from pinbench.evaluator.records.run_view import locate, summary

if TYPE_CHECKING:
    from pinbench.db.plain import Rows
    from pinbench.registry.lockfile import Lockfile
    from pinbench.workspace import Workspace

LISTED = (
    "id",
    "status",
    "runner",
    "system",
    "retry_of",
    "environment_digest",
    "lockfile_digest",
    "trace_level",
    "started_at",
    "finished_at",
    "error",
)
"""The columns a run's summary shows (``run_view.summary``): a listing reads these only."""

FACETS_LISTED = 10_000
"""At most this many matching facets are sent as a list of ids; more are matched by a
subquery (one bind per id: a list stays far below PostgreSQL's 65,535 and SQLite's 32,766)."""


def list_runs(
    ws: Workspace,
    limit: int | None = None,
    *,
    nested: bool = False,
    where: RunFilter | None = None,
    after: str | None = None,
) -> list[dict[str, Any]]:
    """Run objects, newest first, each with its metrics as top-level fields (e.g. ``top1``)
    or, when ``nested``, under ``metrics``. ``where`` keeps the runs it matches; ``after`` (a
    run id or unique prefix) starts the page with the run listed after that one (keyset
    paging: the next page of a list is ``after=`` its last run's id)."""
    from pinbench.db.plain import when_or_none

    with ws.reads() as rows:
        conditions: list[str] = []
        params: dict[str, Any] = {}
        if after is not None:
            at, last = _position(rows, after)
            conditions.append("(started_at, id) < (:after_at, :after_id)")
            params.update(after_at=at, after_id=last)
        matched = _matching(rows, where or RunFilter(), conditions, params)
        if not matched:  # no run has the combination the filter asks for
            return []
        sql = f"SELECT {', '.join(LISTED)} FROM runs"
        if conditions:
            sql += " WHERE " + " AND ".join(conditions)
        sql += " ORDER BY started_at DESC, id DESC"
        if limit is not None:
            sql += " LIMIT :limit"
            params["limit"] = limit
        found = rows(sql, params)  # off one index, the page's rows only
        runs = []
        for values in found:
            run = SimpleNamespace(**dict(zip(LISTED, values, strict=True)))
            run.started_at = when_or_none(run.started_at)
            run.finished_at = when_or_none(run.finished_at)
            runs.append(run)
        ids = [str(r.id) for r in runs]
        metrics: dict[str, dict[str, float]] = {i: {} for i in ids}
        for chunk in chunked(ids):  # every run (no limit) may be more ids than one IN binds
            marks, named = _in(chunk)
            for run_id, metric, value in rows(
                f"SELECT run_id, metric, value FROM results WHERE run_id IN ({marks}) ORDER BY id",
                named,
            ):
                metrics[str(run_id)][str(metric)] = float(value)
        bodies: dict[str, str] = {}  # a page's runs share few lockfiles: parsed once each
        for chunk in chunked(sorted({str(r.lockfile_digest) for r in runs})):
            marks, named = _in(chunk)
            for digest, body in rows(
                f"SELECT digest, body FROM lockfiles WHERE digest IN ({marks})", named
            ):
                bodies[str(digest)] = str(body)
    return [
        summary(
            run,
            _parsed(run.lockfile_digest, bodies[run.lockfile_digest]),
            metrics[run.id],
            nested=nested,
        )
        for run in runs
    ]


@functools.lru_cache(maxsize=256)
def _parsed(digest: str, body: str) -> Lockfile:
    """A stored lockfile, parsed (about 2 ms each): pages of a listing mostly show the same
    few lockfiles again, and a lockfile (a frozen value, keyed by its digest and its very
    text) never changes."""
    from pinbench.registry.lockfile import Lockfile

    return Lockfile.from_bytes(body.encode())


def _position(rows: Rows, run_id: str) -> tuple[Any, str]:
    """Where the run ``run_id`` (an id or a unique prefix) is in the listing's order: its
    ``started_at`` as the database holds it, and its id."""
    found, at = locate(rows, run_id, "id, started_at")
    return at, str(found)


def equalities(where: RunFilter) -> dict[str, str]:
    """The filter's conditions on the facet columns: column name -> the value it must have."""
    out: dict[str, str] = {}
    for prefix, wanted in (("model", where.model), ("framework", where.framework)):
        if wanted is not None:
            out[prefix] = wanted.name
            if wanted.version is not None:
                out[f"{prefix}_version"] = wanted.version
    if where.status is not None:
        out["status"] = where.status
    if where.system is not None:
        out["system"] = where.system
    return out


def _matching(rows: Rows, where: RunFilter, conditions: list[str], params: dict[str, Any]) -> bool:
    """Add ``where``'s conditions on ``runs``; False when no run can match (no facet has the
    combination), so the caller reads nothing."""
    wanted = equalities(where)
    equal = " AND ".join(f"{column} = :w_{column}" for column in wanted)
    params.update({f"w_{column}": value for column, value in wanted.items()})
    if len(wanted) >= 2:
        facets = f"SELECT id FROM run_facets WHERE {equal}"
        ids = [int(r[0]) for r in rows(f"{facets} LIMIT {FACETS_LISTED + 1}", params)]
        if not ids:
            return False
        if len(ids) <= FACETS_LISTED:
            marks, named = _in(ids, "f")
            conditions.append(f"facet_id IN ({marks})")
            params.update(named)
        else:
            conditions.append(f"facet_id IN ({facets})")
    elif wanted:
        conditions.append(equal)
    if where.since is not None:
        conditions.append("started_at >= :since")
        params["since"] = where.since
    if where.until is not None:
        conditions.append("started_at < :until")
        params["until"] = where.until
    return True


def _in(values: Any, name: str = "v") -> tuple[str, dict[str, Any]]:
    """Placeholders for ``IN (...)`` and their parameters."""
    named = {f"{name}{i}": v for i, v in enumerate(values)}
    return ", ".join(f":{k}" for k in named), named
