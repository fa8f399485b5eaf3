"""A run filter as SQL: which rows of ``runs`` a listing reads (decisions 148 and 158).

One condition on the filter columns (a model, a framework, a status or a system) reads that
column's index, newest first. Two or more (``model=NAME@VERSION`` counts two: name and
version) look up the combinations of those columns that runs have had (``run_facets``, a small
table the database's trigger keeps) and keep the runs of the combinations that match
(``facet_id IN (...)``): no matching combination answers at once without reading a run, and
PostgreSQL knows from each facet's share of the runs whether to read the few runs of rare
facets and sort them or to scan newest first until the page is full. Without facets, such a
filter read the first column's whole index range and checked the others per row: at a million
runs, a quarter of a second for a combination that matches nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.orm import Session

from pinbench.db.models import Run, RunFacet
from pinbench.evaluator.records.run_filter import RunFilter

Listing = Select[*tuple[Any, ...]]

FACETS_LISTED = 10_000
"""At most this many matching facets are sent as a list of ids; more are matched by a
subquery (one bind per id: a list stays far below PostgreSQL's 65,535 and SQLite's 32,766)."""


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


def narrowed(session: Session, stmt: Listing, where: RunFilter) -> Listing | None:
    """``stmt`` keeping the runs ``where`` matches; None when no run can match (no facet has
    the combination), so the caller reads nothing."""
    wanted = equalities(where)
    if len(wanted) >= 2:
        facets = select(RunFacet.id).where(*_equal(RunFacet, wanted))
        ids = list(session.scalars(facets.limit(FACETS_LISTED + 1)))
        if not ids:
            return None
        stmt = stmt.where(Run.facet_id.in_(ids if len(ids) <= FACETS_LISTED else facets))
    else:
        stmt = stmt.where(*_equal(Run, wanted))
    if where.since is not None:
        stmt = stmt.where(Run.started_at >= where.since)
    if where.until is not None:
        stmt = stmt.where(Run.started_at < where.until)
    return stmt


def _equal(table: type[Run] | type[RunFacet], wanted: dict[str, str]) -> list[ColumnElement[bool]]:
    return [getattr(table, column) == value for column, value in wanted.items()]
