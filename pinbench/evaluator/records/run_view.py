"""One recorded run as plain data (``show_run``), read with plain SQL (``Workspace.reads``:
SQLite's own driver on the embedded database, SQLAlchemy Core elsewhere; never the ORM), so
that ``pinbench runs show`` imports no SQLAlchemy (issue 75, item 3). The listing, which
filters and pages, is ``history``'s."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.db.plain import Rows
    from pinbench.registry.lockfile import Lockfile
    from pinbench.workspace import Workspace

_RUN_PREFIX = re.compile(r"[0-9a-f-]{1,36}")
RUN_ID_LEN = 36
RUN_ID_RULE = "a run id, or its prefix, is 1 to 36 of 0-9, a-f and '-'"


class RunNotFound(UserError):
    """No run has this id or prefix (or several have the prefix); ``reason`` when the text
    cannot be a run id at all."""

    def __init__(self, *, run: str, reason: str | None = None) -> None:
        why = reason or "see `pinbench runs list`"
        super().__init__(f"no run {run!r} ({why})")
        self.run = run
        self.reason = reason


class AmbiguousRun(RunNotFound):
    """Several runs have ids that begin with the prefix given."""

    def __init__(self, *, run: str, ids: list[str]) -> None:
        UserError.__init__(
            self,
            f"run {run!r} is ambiguous: the ids of several runs begin with it "
            f"({', '.join(ids)}, ...): give more of the id",
        )
        self.run = run
        self.reason = "ambiguous"
        self.ids = ids


def run_id_prefix(text: str) -> str:
    """``text`` if it can begin a run id (a UUID), else RunNotFound saying why. Nothing else
    reaches the SQL prefix match, so ``%`` and ``_`` never act as LIKE wildcards."""
    if not _RUN_PREFIX.fullmatch(text):
        raise RunNotFound(run=text[:80], reason=RUN_ID_RULE)
    return text


def locate(rows: Rows, run_id: str, columns: str = "id") -> Sequence[Any]:
    """The ``columns`` of the one run whose id is or begins with ``run_id`` (RunNotFound if
    none, AmbiguousRun if several); ``id`` must be the first column. A whole id is looked up
    by the primary key; a prefix by LIKE (only 0-9, a-f and '-' reach it:
    ``run_id_prefix``), which PostgreSQL reads off the key's index only under the C collation
    (a full scan otherwise: 0.25 s at a million runs, so ``after`` and the web UI's links give
    whole ids)."""
    prefix = run_id_prefix(run_id)
    whole = len(prefix) == RUN_ID_LEN
    found = rows(
        f"SELECT {columns} FROM runs WHERE id {'=' if whole else 'LIKE'} :id ORDER BY id LIMIT 2",
        {"id": prefix if whole else prefix + "%"},
    )
    if len(found) > 1:
        raise AmbiguousRun(run=run_id, ids=sorted(str(r[0]) for r in found))
    if not found:
        raise RunNotFound(run=run_id)
    return found[0]


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


def run_kind(lock: Lockfile) -> str:
    """What a run measured: ``inference`` of a model (its scenario and mode say how),
    ``training``, or an ``operator`` benchmark."""
    body = lock.body
    return "operator" if body.operator else "training" if body.training else "inference"


def _distributed(lock: Lockfile) -> dict[str, Any] | None:
    """A distributed training run's ``distributed`` section as its lockfile pins it (scheme,
    workers, average_every, and systems: 1 where unset); None for any other run."""
    spec = lock.body.request.distributed
    return None if spec is None else {**msgspec.to_builtins(spec), "systems": spec.spread}


def summary(run: Any, lock: Lockfile, metrics: dict[str, float], *, nested: bool) -> dict[str, Any]:
    """A run (its row, or the listing's columns of it) as plain data; its metrics as top-level
    fields (``top1``...), or under ``metrics`` when ``nested`` (the API's shape)."""
    body = lock.body
    env = body.environment
    out: dict[str, Any] = {
        "id": run.id,
        "status": run.status,
        "runner": run.runner,
        "system": run.system,
        "retry_of": run.retry_of,
        "environment": run.environment_digest,
        "lockfile": run.lockfile_digest,
        "kind": run_kind(lock),
        "task": body.dataset.task if body.dataset else None,
        "model": f"{body.model.name}@{body.model.version}" if body.model else None,
        "operator": body.operator.describe() if body.operator else None,
        "framework": f"{env.framework}@{env.version}" if env else None,
        "dataset": f"{body.dataset.name}@{body.dataset.version}" if body.dataset else None,
        "scenario": body.scenario.name,
        "mode": body.scenario.mode,
        "batch_size": body.batch_size,
        "threads": body.threads,
        "sweep": body.sweep,
        "distributed": _distributed(lock),
        "trace": run.trace_level,
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "error": run.error,
    }
    if nested:
        out["metrics"] = metrics
    else:
        out.update(metrics)
    return out


RUN_COLUMNS = (
    "id, status, runner, system, retry_of, environment_digest, lockfile_digest, trace_level, "
    "started_at, finished_at, error, host, details, latencies_sha256, trace_sha256"
)


class _Row:
    """A ``runs`` row read with plain SQL, with the attributes ``summary`` reads."""

    id: str
    status: str
    runner: str
    system: str | None
    retry_of: str | None
    environment_digest: str | None
    lockfile_digest: str
    trace_level: str
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    host: dict[str, Any]
    details: dict[str, Any] | None
    latencies_sha256: str | None
    trace_sha256: str | None

    def __init__(self, values: Any) -> None:
        from pinbench.db.plain import json_value, when_or_none

        names = [n.strip() for n in RUN_COLUMNS.split(",")]
        row = dict(zip(names, values, strict=True))
        for name in ("started_at", "finished_at"):
            row[name] = when_or_none(row[name])
        for name in ("host", "details"):
            row[name] = None if row[name] is None else json_value(row[name])
        self.__dict__.update(row)


def recorded_lockfile(ws: Workspace, run_id: str) -> tuple[str, Lockfile]:
    """The whole id of the run ``run_id`` names (an id or a unique prefix) and the lockfile it
    ran."""
    from pinbench.registry.lockfile import Lockfile

    with ws.reads() as rows:
        found, digest = locate(rows, run_id, "id, lockfile_digest")
        (body,) = rows("SELECT body FROM lockfiles WHERE digest = :d", {"d": digest})[0]
    return str(found), Lockfile.from_bytes(str(body).encode())


def show_run(ws: Workspace, run_id: str, *, nested: bool = False) -> dict[str, Any]:
    """One run (an id or a unique prefix): its summary plus host facts, details, units and the
    lockfile (metrics as in ``run_list.list_runs``)."""
    from pinbench.registry.lockfile import Lockfile

    with ws.reads() as rows:
        run = _Row(locate(rows, run_id, RUN_COLUMNS))
        results = rows(
            "SELECT metric, value, unit FROM results WHERE run_id = :id ORDER BY id",
            {"id": run.id},
        )
        (body,) = rows(
            "SELECT body FROM lockfiles WHERE digest = :digest", {"digest": run.lockfile_digest}
        )[0]
    lock = Lockfile.from_bytes(str(body).encode())
    out = summary(run, lock, {str(m): float(v) for m, v, _ in results}, nested=nested)
    out["host"] = run.host
    out["details"] = run.details
    out["units"] = {str(m): str(u) for m, _, u in results}
    out["latencies_sha256"] = run.latencies_sha256
    out["trace_sha256"] = run.trace_sha256
    out["lockfile_body"] = lock.to_json()
    return out
