"""Alert rows with plain SQL (``Workspace.reads`` and ``writes``): the runs a gate found
regressed in a series, and the alert a gate records, so that a gate imports no ORM (issue 75,
item 3); listing and acknowledging alerts is ``alerts``'."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

KINDS = ("regression", "change-point")

COLUMNS = (
    "id",
    "series",
    "metric",
    "kind",
    "run_id",
    "state",
    "detail",
    "created_at",
    "acknowledged_by",
    "acknowledged_at",
)


def alert_json(row: Sequence[Any]) -> dict[str, Any]:
    """An alert as plain data, from its ``COLUMNS`` read with plain SQL."""
    from pinbench.db.plain import json_value, when

    values = dict(zip(COLUMNS, row, strict=True))

    def iso(value: Any) -> str | None:
        return None if value is None else when(value).isoformat()

    return {
        "id": int(values["id"]),
        "series": values["series"],
        "metric": values["metric"],
        "kind": values["kind"],
        "run": values["run_id"],
        "state": values["state"],
        "detail": json_value(values["detail"]),
        "created_at": iso(values["created_at"]),
        "acknowledged_by": values["acknowledged_by"],
        "acknowledged_at": iso(values["acknowledged_at"]),
    }


RAISE_SQL = (
    "INSERT INTO alerts (series, metric, kind, run_id, detail, state, created_at) "
    "VALUES (:series, :metric, :kind, :run_id, :detail, 'open', :created_at) "
    "ON CONFLICT (series, metric, kind, run_id) DO NOTHING"
)


def raise_alert(
    ws: Workspace, *, series: str, metric: str, kind: str, run_id: str, detail: dict[str, Any]
) -> dict[str, Any]:
    """Record an alert, with plain SQL (``Workspace.writes``: a gate's path imports no ORM);
    one already recorded for the same series, metric, kind and run is not recorded twice (a
    gate run again on the same candidate): the table's unique constraint holds that under
    concurrency too, and a writer that loses the race returns the row the other one wrote."""
    assert kind in KINDS, kind
    finding = {"series": series, "metric": metric, "kind": kind, "run_id": run_id}
    with ws.writes() as rows:
        rows(RAISE_SQL, {**finding, "detail": json.dumps(detail), "created_at": datetime.now(UTC)})
        (found,) = rows(
            f"SELECT {', '.join(COLUMNS)} FROM alerts WHERE series = :series AND metric = "
            ":metric AND kind = :kind AND run_id = :run_id",
            finding,
        )
    return alert_json(found)


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
