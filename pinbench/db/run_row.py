"""A recorded run as plain data: its row and its results, read with plain SQL (``read_run``) or
made from a record about to be written (``RunRow.of_record``): what a run's attestation signs
(``provenance.statement``) and checks a record against, without the ORM (issue 75)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pinbench.db.run_record import COLUMNS as RECORD_COLUMNS

if TYPE_CHECKING:
    from pinbench.db.plain import Rows
    from pinbench.db.run_record import RunRecord


@dataclass(frozen=True, slots=True)
class ResultRow:
    metric: str
    value: float
    unit: str


@dataclass(frozen=True, slots=True)
class RunRow:
    """The columns of ``runs`` a run's statement and ``results.json`` read, and its results."""

    id: str
    lockfile_digest: str
    status: str
    runner: str
    started_at: datetime | None
    finished_at: datetime | None
    host: dict[str, Any] | None
    error: str | None
    details: dict[str, Any] | None
    environment_digest: str | None
    latencies_sha256: str | None
    trace_level: str
    trace_sha256: str | None
    system: str | None
    model: str | None
    model_version: str | None
    framework: str | None
    framework_version: str | None
    submitted_by: str | None
    retry_of: str | None
    results: tuple[ResultRow, ...]

    @classmethod
    def of_record(cls, record: RunRecord, queued: Mapping[str, Any] | None = None) -> RunRow:
        """The row ``record`` writes (``db.run_record.write``), with what its queued row holds
        (``queued``: ``QUEUED``'s columns, which a record does not write; none for a run that
        was never queued)."""
        before = queued or {}
        values: dict[str, Any] = {name: record.columns[name] for name in COLUMNS}
        values |= {name: before.get(name) for name in QUEUED}
        results = tuple(ResultRow(m, v, u) for m, v, u in record.results)
        return cls(id=record.id, **values, results=results)


COLUMNS = tuple(sorted(RECORD_COLUMNS))
"""``RunRow``'s columns a record writes."""
QUEUED = ("submitted_by", "retry_of")
"""``RunRow``'s columns set when a run is queued, which its record leaves as they are."""


class BadRow(ValueError):
    """A run's row holds what its column cannot (a ``host`` that is not JSON): ``column``."""

    def __init__(self, run_id: str, column: str, reason: str) -> None:
        super().__init__(f"run {run_id}'s {column} {reason}")
        self.run_id = run_id
        self.column = column
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (BadRow, (self.run_id, self.column, self.reason))


def queued_columns(rows: Rows, run_id: str) -> dict[str, Any]:
    """``QUEUED``'s columns of run ``run_id`` as its queued row holds them (empty: no row)."""
    found = rows(f"SELECT {', '.join(QUEUED)} FROM runs WHERE id = :id", {"id": run_id})
    return dict(zip(QUEUED, found[0], strict=True)) if found else {}


_JSON = ("host", "details")
_TIMES = ("started_at", "finished_at")


def read_run(rows: Rows, run_id: str) -> RunRow | None:
    """Run ``run_id`` (a whole id) as recorded, with its results in the order written; None
    when there is no such run."""
    from pinbench.db.plain import _stamp, json_value, when_or_none

    names = (*COLUMNS, *QUEUED)
    found = rows(f"SELECT id, {', '.join(names)} FROM runs WHERE id = :id", {"id": run_id})
    if not found:
        return None
    values: dict[str, Any] = dict(zip(names, found[0][1:], strict=True))
    for name in _JSON:
        try:
            values[name] = None if values[name] is None else json_value(values[name])
        except ValueError:
            raise BadRow(run_id, name, "is not JSON") from None
    for name in _TIMES:
        raw = values[name]
        try:
            values[name] = when_or_none(raw)
        except (ValueError, TypeError):
            raise BadRow(run_id, name, "is not a time") from None
        if isinstance(raw, str) and raw != _stamp(values[name]):  # SQLite orders the text
            raise BadRow(run_id, name, f"{raw[:40]!r} is not in the form the registry writes")
    results = rows(
        "SELECT metric, value, unit FROM results WHERE run_id = :id ORDER BY id", {"id": run_id}
    )
    return RunRow(
        id=str(found[0][0]),
        **values,
        results=tuple(ResultRow(str(m), float(v), str(u)) for m, v, u in results),
    )
