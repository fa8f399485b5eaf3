"""Thresholds kept in the registry: per series and metric, versioned (decision 251).

Setting a threshold adds its next version (1, 2, ...); earlier versions stay, so every verdict
can name the version it was judged under and ``series threshold list --all`` shows how a bound
changed. Setting one equal to the current version adds nothing. A threshold is refused,
naming the field, when ``stats.validate`` refuses it, and when its series has never recorded
its metric (a bound that would never be checked)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.series.members import Member
from pinbench.series.names import SeriesKey
from pinbench.series.threshold import Threshold
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.db.plain import Rows

RETIRED = "retired"
"""The ``test`` of a version that retires its metric's threshold (``retire_threshold``): the
series no longer judges the metric; the earlier versions stay, and setting it again adds the
next version."""
LOWER_IS_BETTER_SUFFIXES = ("_ns", "_ms", "_s", "_bytes")
"""A metric whose name ends so (latencies, durations, memory) is better lower by default."""
FIELDS = ("test", "direction", "max_change", "alpha", "window", "min_runs", "tolerance")


@dataclass(frozen=True, slots=True)
class Versioned:
    """One stored version of a threshold."""

    series: str
    version: int
    threshold: Threshold
    created_by: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "series": self.series,
            "version": self.version,
            **asdict(self.threshold),
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(),
        }


def default_direction(metric: str) -> str:
    """``lower`` for latencies, durations and memory; ``higher`` for the rest."""
    return "lower" if metric.endswith(LOWER_IS_BETTER_SUFFIXES) else "higher"


def set_threshold(
    ws: Workspace,
    key: SeriesKey,
    members: list[Member],
    threshold: Threshold,
    *,
    by: str,
) -> tuple[Versioned, bool]:
    """Store ``threshold`` as the next version for ``key``; (the current version, whether it
    was added). ``members``: the series' runs, to refuse a metric it never recorded."""
    from pinbench.series.stats import validate

    validate(threshold)
    recorded = sorted({m for member in members for m in member.metrics})
    if threshold.metric not in recorded:
        raise UserError(
            f"series {key} never recorded {threshold.metric!r}: a threshold on it would never "
            f"be checked (its metrics: {', '.join(recorded) or 'none'})"
        )
    with ws.writes() as rows:
        latest = _latest(rows, str(key), threshold.metric)
        if latest is not None and latest.threshold == threshold:
            return latest, False
        version = (latest.version + 1) if latest is not None else 1
        return _insert(rows, str(key), version, threshold, by), True


def retire_threshold(ws: Workspace, key: SeriesKey, metric: str, *, by: str) -> Versioned:
    """Stop judging ``metric`` in ``key``'s series: a next version whose test is ``RETIRED``
    (its other fields the current version's); the earlier versions stay. Refused when the
    metric has no current threshold."""
    with ws.writes() as rows:
        latest = _latest(rows, str(key), metric)
        if latest is None or latest.threshold.test == RETIRED:
            state = "no" if latest is None else f"a retired (v{latest.version})"
            raise UserError(
                f"series {key} has {state} threshold on {metric!r}: nothing to retire "
                f"(`pinbench series threshold list {key}`)"
            )
        retired = replace(latest.threshold, test=RETIRED)  # type: ignore[arg-type]
        return _insert(rows, str(key), latest.version + 1, retired, by)


COLUMNS = (
    'series, version, metric, test, direction, max_change, alpha, "window", min_runs, tolerance, '
    "created_by, created_at"
)
"""A stored threshold's columns, in ``thresholds``' order (``window`` quoted: PostgreSQL
reserves the word)."""


def thresholds(ws: Workspace, key: SeriesKey, *, every_version: bool = False) -> list[Versioned]:
    """The series' thresholds: the current version of each metric's (a retired one left out),
    or every version (the retiring ones included); read with plain SQL (``Workspace.reads``)."""
    newest = (
        ""
        if every_version
        else " AND version = (SELECT MAX(version) FROM series_thresholds "
        "AS newer WHERE newer.series = t.series AND newer.metric = t.metric)"
    )
    with ws.reads() as read:
        rows = read(
            f"SELECT {COLUMNS} FROM series_thresholds AS t WHERE series = :series{newest} "
            "ORDER BY metric, version",
            {"series": str(key)},
        )
    versions = [_versioned(row) for row in rows]
    return [v for v in versions if every_version or v.threshold.test != RETIRED]


def _versioned(row: Sequence[Any]) -> Versioned:
    """A stored version from its ``COLUMNS``."""
    from pinbench.db.plain import when

    series, version, metric, test, direction, max_change, alpha, window, min_runs, tol, by, at = row
    threshold = Threshold(
        metric=str(metric),
        test=test,
        direction=direction,
        max_change=None if max_change is None else float(max_change),
        alpha=float(alpha),
        window=int(window),
        min_runs=int(min_runs),
        tolerance=None if tol is None else float(tol),
    )
    return Versioned(str(series), int(version), threshold, str(by), when(at))


def _latest(rows: Rows, series: str, metric: str) -> Versioned | None:
    """The newest stored version of ``series``'s threshold on ``metric`` (a retiring one too)."""
    found = rows(
        f"SELECT {COLUMNS} FROM series_thresholds WHERE series = :series AND metric = :metric "
        "ORDER BY version DESC LIMIT 1",
        {"series": series, "metric": metric},
    )
    return _versioned(found[0]) if found else None


def _insert(rows: Rows, series: str, version: int, threshold: Threshold, by: str) -> Versioned:
    """Store ``threshold`` as ``series``'s version ``version``; the same key twice (another
    writer's version in between) is ``Conflict``."""
    at = datetime.now(UTC)
    values = {f: getattr(threshold, f) for f in FIELDS}
    rows(
        f"INSERT INTO series_thresholds ({COLUMNS}) VALUES (:series, :version, :metric, :test, "
        ":direction, :max_change, :alpha, :window, :min_runs, :tolerance, :created_by, "
        ":created_at)",
        {**values, "series": series, "version": version, "metric": threshold.metric,
         "created_by": by, "created_at": at},
    )  # fmt: skip
    return Versioned(series, version, threshold, by, at)
