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
from pinbench.evaluator.run_filter import RunFilter

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


FACET_COLUMNS = ("model", "model_version", "framework", "framework_version", "status", "system")


def misfiled(session: Session, limit: int = 100) -> list[str]:
    """Ids of runs (at most ``limit``) whose facet is missing or names other values than the
    run's own columns: a filtered listing would show them where they do not belong or miss
    them. The trigger of migration 0013 keeps this empty; ``pinbench fsck`` reports it."""
    from sqlalchemy import and_, func, not_, or_

    same = and_(
        *(
            func.coalesce(getattr(RunFacet, c), "") == func.coalesce(getattr(Run, c), "")
            for c in FACET_COLUMNS
        )
    )
    stmt = (
        select(Run.id)
        .outerjoin(RunFacet, RunFacet.id == Run.facet_id)
        .where(or_(RunFacet.id.is_(None), not_(same)))
        .order_by(Run.id)
        .limit(limit)
    )
    return list(session.scalars(stmt))
