"""A recorded run as plain data: its row and its results, read with plain SQL (``read_run``) or
made from a record about to be written (``RunRow.of_record``): what a run's attestation signs
(``provenance.statement``) and checks a record against, without the ORM (issue 75)."""

from __future__ import annotations

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
    results: tuple[ResultRow, ...]

    @classmethod
    def of_record(cls, record: RunRecord) -> RunRow:
        """The row ``record`` writes (``db.run_record.write``)."""
        c = record.columns
        return cls(
            id=record.id,
            **{name: c[name] for name in COLUMNS},
            results=tuple(ResultRow(m, v, u) for m, v, u in record.results),
        )


COLUMNS = tuple(
    sorted(RECORD_COLUMNS - {"model", "model_version", "framework", "framework_version"})
)
"""``RunRow``'s columns after its id: what a record writes but the listing's filter columns."""
_JSON = ("host", "details")
_TIMES = ("started_at", "finished_at")


def read_run(rows: Rows, run_id: str) -> RunRow | None:
    """Run ``run_id`` (a whole id) as recorded, with its results in the order written; None
    when there is no such run."""
    from pinbench.db.plain import json_value, when_or_none

    found = rows(f"SELECT id, {', '.join(COLUMNS)} FROM runs WHERE id = :id", {"id": run_id})
    if not found:
        return None
    values: dict[str, Any] = dict(zip(COLUMNS, found[0][1:], strict=True))
    for name in _JSON:
        values[name] = None if values[name] is None else json_value(values[name])
    for name in _TIMES:
        values[name] = when_or_none(values[name])
    results = rows(
        "SELECT metric, value, unit FROM results WHERE run_id = :id ORDER BY id", {"id": run_id}
    )
    return RunRow(
        id=str(found[0][0]),
        **values,
        results=tuple(ResultRow(str(m), float(v), str(u)) for m, v, u in results),
    )
