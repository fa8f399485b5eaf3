"""A finished run's record as data, and writing it once (invariant 4).

``RunRecord`` is everything a run's row and results hold when it ends, in plain JSON values
(times as ISO 8601 text), so that a record the database could not take is kept on disk
(``db.pending``) and written later by whoever finds it, as it would have been written then.

``write`` claims the row with an ``UPDATE ... WHERE status IN ('queued', 'running')`` first: a
row finished meanwhile (a server that was thought dead had its run marked ``interrupted``) is
never turned into another outcome (decision 147).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from pinbench.db.models import Result, Run

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

UNFINISHED = ("queued", "running")
TIMES = ("started_at", "finished_at")
"""The columns kept as ISO 8601 text in a record's JSON."""
COLUMNS = frozenset(
    {
        "lockfile_digest",
        "status",
        "runner",
        "started_at",
        "finished_at",
        "host",
        "system",
        "error",
        "details",
        "environment_digest",
        "latencies_sha256",
        "trace_level",
        "trace_sha256",
        "model",
        "model_version",
        "framework",
        "framework_version",
    }
)
"""The run row's columns a record sets (the rest: its queueing, kept as they are)."""


class BadRecord(ValueError):
    """A kept record that is not one (a file cut short, or edited)."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Run ``id``'s row ``columns`` (``COLUMNS``) and its ``results`` (metric, value, unit)."""

    id: str
    columns: dict[str, Any]
    results: tuple[tuple[str, float, str], ...]

    @property
    def status(self) -> str:
        return str(self.columns["status"])

    def to_json(self) -> dict[str, Any]:
        columns = {
            k: v.isoformat() if isinstance(v, datetime) else v for k, v in self.columns.items()
        }
        return {"id": self.id, "columns": columns, "results": [list(r) for r in self.results]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        try:
            columns = dict(data["columns"])
            if set(columns) != COLUMNS:
                raise BadRecord(f"columns {sorted(set(columns) ^ COLUMNS)} differ")
            for name in TIMES:
                if columns[name] is not None:
                    columns[name] = datetime.fromisoformat(columns[name])
            results = tuple((str(m), float(v), str(u)) for m, v, u in data["results"])
            return cls(str(data["id"]), columns, results)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadRecord(f"not a run record: {exc}") from None

    def blob_fields(self) -> tuple[str, str | None, str | None, object]:
        """(id, latencies' sha256, trace's sha256, details): what ``db.upkeep`` reads the
        blobs a run names from."""
        c = self.columns
        return self.id, c["latencies_sha256"], c["trace_sha256"], c["details"]


def write(ws: Workspace, record: RunRecord) -> bool:
    """Write the record whole, in one transaction; False (nothing written) when its row is
    already finished: a record is written once."""
    with ws.transaction() as session:
        claim = (
            update(Run)
            .where(Run.id == record.id, Run.status.in_(UNFINISHED))
            .values(status=record.status)
            .execution_options(synchronize_session=False)
        )
        claimed = session.execute(claim).rowcount  # type: ignore[attr-defined]
        if not claimed and session.get(Run, record.id) is not None:
            return False  # finished already: kept as it is
        session.merge(
            Run(
                id=record.id,
                **record.columns,
                results=[Result(metric=m, value=v, unit=u) for m, v, u in record.results],
            )
        )
    return True
