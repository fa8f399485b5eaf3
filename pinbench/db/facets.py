"""Run facets (decision 158): the combinations of a run's filter columns, kept by the
database's trigger (migration 0013), and the check that every run is filed under its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.db.plain import Rows

FACET_COLUMNS = ("model", "model_version", "framework", "framework_version", "status", "system")

MISFILED_SQL = (
    "SELECT runs.id FROM runs LEFT JOIN run_facets ON run_facets.id = runs.facet_id "
    "WHERE run_facets.id IS NULL OR NOT ("
    + " AND ".join(f"COALESCE(run_facets.{c}, '') = COALESCE(runs.{c}, '')" for c in FACET_COLUMNS)
    + ")"
)
"""The runs whose facet is missing or names other values than the run's own columns."""


def misfiled(rows: Rows, limit: int = 100) -> tuple[list[str], int]:
    """Ids of runs (the first ``limit``) whose facet is missing or names other values than the
    run's own columns, and how many there are: a filtered listing would show them where they
    do not belong or miss them. The trigger of migration 0013 keeps this empty; ``pinbench
    fsck`` reports it."""
    first = [
        str(r[0]) for r in rows(f"{MISFILED_SQL} ORDER BY runs.id LIMIT :limit", {"limit": limit})
    ]
    if len(first) < limit:
        return first, len(first)
    ((count,),) = rows(f"SELECT COUNT(*) FROM ({MISFILED_SQL}) AS wrong", {})
    return first, int(count)
