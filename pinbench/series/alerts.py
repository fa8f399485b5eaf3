"""Alerts: a regression a gate found, or a change point found when a run was recorded on a
server (decision 253). Listed and acknowledged, never deleted; acknowledging one twice is
refused, naming who did it first. Read and written with plain SQL (``Workspace.reads`` and
``writes``; ``alert_rows`` has the rows a gate reads and writes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pinbench.errors import UserError
from pinbench.series.alert_rows import COLUMNS
from pinbench.series.alert_rows import KINDS as KINDS
from pinbench.series.alert_rows import alert_json as _json
from pinbench.series.alert_rows import raise_alert as raise_alert
from pinbench.series.alert_rows import regressed_runs as regressed_runs
from pinbench.series.series_errors import AlertNotFound
from pinbench.workspace import Workspace

STATES = ("open", "acknowledged")


SELECT = f"SELECT {', '.join(COLUMNS)} FROM alerts"


def alerted_runs(ws: Workspace, *, series: str, metric: str, kind: str) -> set[str]:
    """The runs that already have an alert of ``kind`` for ``series`` and ``metric``."""
    with ws.reads() as rows:
        found = rows(
            "SELECT run_id FROM alerts WHERE series = :series AND metric = :metric "
            "AND kind = :kind",
            {"series": series, "metric": metric, "kind": kind},
        )
    return {str(run_id) for (run_id,) in found}


def list_alerts(
    ws: Workspace, *, series: str | None = None, state: str | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    """Alerts, newest first, of one series and in one state when given."""
    if state is not None and state not in STATES:
        raise UserError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    if not 1 <= limit <= 1000:
        raise UserError(f"limit must be from 1 to 1000, got {limit}")
    if series is not None:
        series = _series_named(ws, series)
    wanted = {k: v for k, v in (("series", series), ("state", state)) if v is not None}
    where = " AND ".join(f"{k} = :{k}" for k in wanted)
    with ws.reads() as rows:
        found = rows(
            f"{SELECT}{' WHERE ' + where if where else ''} "
            "ORDER BY created_at DESC, id DESC LIMIT :limit",
            {**wanted, "limit": limit},
        )
    return [_json(row) for row in found]


def acknowledge(ws: Workspace, alert_id: int, *, by: str) -> dict[str, Any]:
    """Mark an open alert acknowledged by ``by``."""
    with ws.writes() as rows:
        found = rows(f"{SELECT} WHERE id = :id", {"id": alert_id})
        if not found:
            raise AlertNotFound(alert_id=alert_id)
        alert = _json(found[0])
        if alert["state"] == "acknowledged":
            raise UserError(
                f"alert {alert_id} was acknowledged already by {alert['acknowledged_by']}"
            )
        at = datetime.now(UTC)
        rows(
            "UPDATE alerts SET state = 'acknowledged', acknowledged_by = :by, "
            "acknowledged_at = :at WHERE id = :id",
            {"by": by, "at": at, "id": alert_id},
        )
    return {
        **alert,
        "state": "acknowledged",
        "acknowledged_by": by,
        "acknowledged_at": at.isoformat(),
    }


def alert_of(ws: Workspace, alert_id: int) -> dict[str, Any]:
    with ws.reads() as rows:
        found = rows(f"{SELECT} WHERE id = :id", {"id": alert_id})
    if not found:
        raise AlertNotFound(alert_id=alert_id)
    return _json(found[0])


def counts(ws: Workspace) -> tuple[dict[str, int], dict[str, int]]:
    """Alerts by state and by kind (every one, 0 where none), for ``/metrics``."""
    by_state, by_kind = dict.fromkeys(STATES, 0), dict.fromkeys(KINDS, 0)
    with ws.reads() as rows:
        found = rows("SELECT state, kind, COUNT(*) FROM alerts GROUP BY state, kind", {})
    for state, kind, n in found:
        by_state[str(state)] += int(n)
        by_kind[str(kind)] += int(n)
    return by_state, by_kind


def _series_named(ws: Workspace, name: str) -> str:
    """The series ``name`` names, as ``series show`` reads it (whole, or its leading fields
    when they name one series; a bad field, no series or several refused, naming why), or a
    whole name its alerts still carry after its runs were deleted: a filter never silently
    matches nothing."""
    from pinbench.series.members import resolve
    from pinbench.series.names import parse_fields
    from pinbench.series.series_errors import SeriesNotFound

    parse_fields(name)
    try:
        key, _ = resolve(ws, name)
    except SeriesNotFound:
        with ws.reads() as rows:
            if rows("SELECT id FROM alerts WHERE series = :name LIMIT 1", {"name": name}):
                return name
        raise
    return str(key)
