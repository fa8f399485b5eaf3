"""Alerts: a regression a gate found, or a change point found when a run was recorded on a
server (decision 253). Listed and acknowledged, never deleted; acknowledging one twice is
refused, naming who did it first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select

from pinbench.db.models import Alert
from pinbench.errors import UserError
from pinbench.series.alert_rows import KINDS as KINDS
from pinbench.series.alert_rows import alert_json as _json
from pinbench.series.alert_rows import raise_alert as raise_alert
from pinbench.series.alert_rows import regressed_runs as regressed_runs
from pinbench.series.series_errors import AlertNotFound
from pinbench.workspace import Workspace

STATES = ("open", "acknowledged")


def alerted_runs(ws: Workspace, *, series: str, metric: str, kind: str) -> set[str]:
    """The runs that already have an alert of ``kind`` for ``series`` and ``metric``."""
    with ws.transaction() as session:
        return set(
            session.scalars(
                select(Alert.run_id).where(
                    Alert.series == series, Alert.metric == metric, Alert.kind == kind
                )
            )
        )


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
    with ws.transaction() as session:
        stmt = select(Alert).order_by(Alert.created_at.desc(), Alert.id.desc()).limit(limit)
        if series is not None:
            stmt = stmt.where(Alert.series == series)
        if state is not None:
            stmt = stmt.where(Alert.state == state)
        return [_json(row) for row in session.scalars(stmt)]


def acknowledge(ws: Workspace, alert_id: int, *, by: str) -> dict[str, Any]:
    """Mark an open alert acknowledged by ``by``."""
    with ws.transaction() as session:
        row = session.get(Alert, alert_id)
        if row is None:
            raise AlertNotFound(alert_id=alert_id)
        if row.state == "acknowledged":
            raise UserError(f"alert {alert_id} was acknowledged already by {row.acknowledged_by}")
        row.state = "acknowledged"
        row.acknowledged_by = by
        row.acknowledged_at = datetime.now(UTC)
        session.flush()
        return _json(row)


def alert_of(ws: Workspace, alert_id: int) -> dict[str, Any]:
    with ws.transaction() as session:
        row = session.get(Alert, alert_id)
        if row is None:
            raise AlertNotFound(alert_id=alert_id)
        return _json(row)


def counts(ws: Workspace) -> tuple[dict[str, int], dict[str, int]]:
    """Alerts by state and by kind (every one, 0 where none), for ``/metrics``."""
    by_state, by_kind = dict.fromkeys(STATES, 0), dict.fromkeys(KINDS, 0)
    with ws.transaction() as session:
        rows = session.execute(
            select(Alert.state, Alert.kind, func.count()).group_by(Alert.state, Alert.kind)
        )
        for state, kind, n in rows:
            by_state[state] += int(n)
            by_kind[kind] += int(n)
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
        with ws.transaction() as session:
            if session.scalars(select(Alert.id).where(Alert.series == name).limit(1)).first():
                return name
        raise
    return str(key)
