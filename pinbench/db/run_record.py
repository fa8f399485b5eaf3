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

if TYPE_CHECKING:
    from pinbench.db.plain import Rows
    from pinbench.workspace import Workspace

Also = Callable[["Rows", str], None]
"""What ``write`` adds to a record's transaction once its row is written: (its plain SQL
statements, run id)."""
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


CLAIM_SQL = "UPDATE runs SET status = :status WHERE id = :id AND status IN ('queued', 'running')"
"""A record's claim on its run's row: only an unfinished row is turned into its outcome."""
_JSON_COLUMNS = frozenset({"host", "details"})


def _values(record: RunRecord) -> dict[str, Any]:
    """The record's columns as statement parameters (a JSON column as its JSON text, as the
    ORM wrote it: ``null`` for None)."""
    import json

    return {
        "id": record.id,
        **{k: json.dumps(v) if k in _JSON_COLUMNS else v for k, v in record.columns.items()},
    }


def _write_row(rows: Rows, record: RunRecord, *, insert: bool) -> None:
    """The record's columns onto its row (``insert``: a new row) and its results in place of
    any the row had."""
    names = sorted(COLUMNS)
    if insert:
        rows(
            f"INSERT INTO runs (id, {', '.join(names)}) "
            f"VALUES (:id, {', '.join(':' + n for n in names)})",
            _values(record),
        )
    else:
        rows(
            f"UPDATE runs SET {', '.join(f'{n} = :{n}' for n in names)} WHERE id = :id",
            _values(record),
        )
    rows("DELETE FROM results WHERE run_id = :id", {"id": record.id})
    for metric, value, unit in record.results:
        rows(
            "INSERT INTO results (run_id, metric, value, unit) VALUES (:id, :m, :v, :u)",
            {"id": record.id, "m": metric, "v": value, "u": unit},
        )


def write(ws: Workspace, record: RunRecord, also: Also | None = None) -> bool:
    """Write the record whole, in one transaction of plain SQL; False (nothing written) when
    its row is already finished: a record is written once. ``also(rows, run id)`` adds to that
    transaction once the row is written (the run's attestation)."""
    with ws.writes() as rows:
        claimed = rows(CLAIM_SQL + " RETURNING id", {"status": record.status, "id": record.id})
        if not claimed and rows("SELECT id FROM runs WHERE id = :id", {"id": record.id}):
            return False  # finished already: kept as it is
        _write_row(rows, record, insert=not claimed)
        if also is not None:
            also(rows, record.id)  # after the row: what it adds refers to it
    return True


def write_left(ws: Workspace, record: RunRecord) -> bool:
    """Write a record a process left in the home (``db.pending``) as ``write`` does, but only
    onto an existing, unfinished row whose server instance is gone; False (nothing written)
    when its row is finished already. ``NotItsRecord`` when no row is there, or the row was
    not queued by a server; ``RecordNotYet`` while its server instance lives."""
    with ws.writes() as rows:
        found = rows("SELECT status, instance_id FROM runs WHERE id = :id", {"id": record.id})
        if not found:
            raise NotItsRecord(f"run {record.id} has no row: a kept record never creates one")
        status, instance = found[0]
        if status not in UNFINISHED:
            return False  # finished already: kept as it is
        if instance is None:
            raise NotItsRecord(f"run {record.id} was not queued by a server")
        live = rows(
            "SELECT id FROM server_instances WHERE id = :instance AND expires_at >= :now",
            {"instance": instance, "now": datetime.now(UTC)},
        )
        if live:
            raise RecordNotYet(f"run {record.id}'s server instance {instance} is alive")
        claim = CLAIM_SQL + " AND instance_id = :instance RETURNING id"
        if not rows(claim, {"status": record.status, "id": record.id, "instance": instance}):
            return False  # finished meanwhile
        _write_row(rows, record, insert=False)
    return True
