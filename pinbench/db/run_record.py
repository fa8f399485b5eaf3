"""A finished run's record as data, and writing it once (invariant 4).

``RunRecord`` is everything a run's row and results hold when it ends, in plain JSON values
(times as ISO 8601 text), so that a record the database could not take is kept on disk
(``db.pending``) and written later by whoever finds it, as it would have been written then.

``write`` claims the row with an ``UPDATE ... WHERE status IN ('queued', 'running')`` first: a
row finished meanwhile (a server that was thought dead had its run marked ``interrupted``) is
never turned into another outcome (decision 147).

``write_left`` writes a record that a process left in the home (``db.pending``): a file anything
running as the service user could have written, so it never creates a row, and it writes only
a run a server queued (its row names the server instance) whose row is still unfinished and
whose instance is no longer alive: no process of its own is recording it (decision 190,
amended).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from pinbench.db.models import Result, Run, ServerInstance

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from pinbench.workspace import Workspace

Also = Callable[["Session", str], None]
"""What ``write`` adds to a record's transaction once its row is written: (session, run id)."""
UNFINISHED = ("queued", "running")
FINISHED = frozenset({"succeeded", "failed", "cancelled", "interrupted"})
"""The statuses a record may give its run."""
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


class NotItsRecord(BadRecord):
    """A kept record that cannot be its run's: no row, or a row no dead server queued."""


class RecordNotYet(Exception):
    """A kept record whose run's server instance still lives: left for its own process (or
    for a sweep after its lease has run out)."""


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
            if columns["status"] not in FINISHED:
                raise BadRecord(f"status {str(columns['status'])[:40]!r} is not a finished one")
            for name in TIMES:
                if columns[name] is not None:
                    columns[name] = datetime.fromisoformat(columns[name])
            results = tuple(_result(r) for r in data["results"])
            if not isinstance(data["id"], str):
                raise BadRecord("its id is not text")
            return cls(data["id"], columns, results)
        except BadRecord:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise BadRecord(f"not a run record: {exc}") from None

    def blob_fields(self) -> tuple[str, str | None, str | None, object]:
        """(id, latencies' sha256, trace's sha256, details): what ``db.upkeep`` reads the
        blobs a run names from."""
        c = self.columns
        return self.id, c["latencies_sha256"], c["trace_sha256"], c["details"]


def _result(item: Any) -> tuple[str, float, str]:
    """One result (metric, value, unit) as kept: two texts around a number."""
    metric, value, unit = item
    if not (isinstance(metric, str) and isinstance(unit, str)):
        raise BadRecord(f"result {str(item)[:80]} does not name its metric and unit in text")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadRecord(f"metric {metric[:80]!r}'s value {str(value)[:40]!r} is not a number")
    return metric, float(value), unit


def write(ws: Workspace, record: RunRecord, also: Also | None = None) -> bool:
    """Write the record whole, in one transaction; False (nothing written) when its row is
    already finished: a record is written once. ``also(session, run id)`` adds to that
    transaction once the row is written (the run's attestation)."""
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
        session.merge(as_row(record))
        if also is not None:
            session.flush()  # the row first: what ``also`` adds refers to it
            also(session, record.id)
    return True


def as_row(record: RunRecord) -> Run:
    """The run row ``record`` writes (not in a session)."""
    return Run(
        id=record.id,
        **record.columns,
        results=[Result(metric=m, value=v, unit=u) for m, v, u in record.results],
    )


def write_left(ws: Workspace, record: RunRecord) -> bool:
    """Write a record a process left in the home (``db.pending``) as ``write`` does, but only
    onto an existing, unfinished row whose server instance is gone; False (nothing written)
    when its row is finished already. ``NotItsRecord`` when no row is there, or the row was
    not queued by a server; ``RecordNotYet`` while its server instance lives."""
    with ws.transaction() as session:
        row = session.get(Run, record.id)
        if row is None:
            raise NotItsRecord(f"run {record.id} has no row: a kept record never creates one")
        if row.status not in UNFINISHED:
            return False  # finished already: kept as it is
        instance = row.instance_id
        if instance is None:
            raise NotItsRecord(f"run {record.id} was not queued by a server")
        live = select(ServerInstance.id).where(
            ServerInstance.id == instance, ServerInstance.expires_at >= datetime.now(UTC)
        )
        if session.execute(live).first() is not None:
            raise RecordNotYet(f"run {record.id}'s server instance {instance} is alive")
        claim = (
            update(Run)
            .where(Run.id == record.id, Run.status.in_(UNFINISHED), Run.instance_id == instance)
            .values(status=record.status)
            .execution_options(synchronize_session=False)
        )
        if not session.execute(claim).rowcount:  # type: ignore[attr-defined]
            return False  # finished meanwhile
        session.merge(
            Run(
                id=record.id,
                **record.columns,
                results=[Result(metric=m, value=v, unit=u) for m, v, u in record.results],
            )
        )
    return True
