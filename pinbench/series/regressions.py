"""The runs a gate found regressed in a series, read with plain SQL (``Workspace.reads``): a
gate leaves them out of its window without importing the ORM (issue 75, item 3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.workspace import Workspace


def regressed_runs(ws: Workspace, series: str) -> set[str]:
    """Every candidate run a gate found regressed in ``series``: the run each regression alert
    names and the other candidate runs judged with it (its ``detail``'s ``runs``)."""
    from pinbench.db.plain import json_value

    found: set[str] = set()
    with ws.reads() as rows:
        alerts = rows(
            "SELECT run_id, detail FROM alerts WHERE series = :series AND kind = 'regression'",
            {"series": series},
        )
    for run_id, detail in alerts:
        found.add(str(run_id))
        parsed = json_value(detail) if detail is not None else None
        runs = parsed.get("runs") if isinstance(parsed, dict) else None
        found.update(r for r in runs or [] if isinstance(r, str))
    return found
