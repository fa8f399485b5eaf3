"""Reading recorded runs: list (newest first) and show, as plain data for the CLI and API."""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime
from typing import Any

import msgspec
from sqlalchemy import Row, select, tuple_
from sqlalchemy.orm import Session, selectinload

from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Result, Run
from pinbench.errors import UserError
from pinbench.evaluator.run_filter import RunFilter
from pinbench.evaluator.run_where import Listing, narrowed
from pinbench.registry.lockfile import Lockfile
from pinbench.run_metrics import COMPARED
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


def find_run(session: Session, run_id: str) -> Run:
    """The one run whose id is or begins with ``run_id``; RunNotFound if none, AmbiguousRun
    if several."""
    prefix = run_id_prefix(run_id)
    # a whole id is looked up by the primary key; a prefix by LIKE, which PostgreSQL reads
    # off the key's index only under the C collation (a full scan otherwise: 0.25 s at a
    # million runs, so ``after`` and the web UI's links give whole ids)
    match = (
        Run.id == prefix
        if len(prefix) == RUN_ID_LEN
        else Run.id.startswith(prefix, autoescape=True)
    )
    matches = session.scalars(
        select(Run).options(selectinload(Run.results)).where(match).limit(2)
    ).all()
    if len(matches) > 1:
        raise AmbiguousRun(run=run_id, ids=sorted(m.id for m in matches))
    if not matches:
        raise RunNotFound(run=run_id)
    return matches[0]


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
    workers, average_every); None for any other run."""
    spec = lock.body.request.distributed
    return None if spec is None else dict(msgspec.to_builtins(spec))


def _summary(
    run: Run | Row[Any], lock: Lockfile, metrics: dict[str, float], *, nested: bool
) -> dict[str, Any]:
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


def list_runs(
    ws: Workspace,
    limit: int | None = None,
    *,
    nested: bool = False,
    where: RunFilter | None = None,
    after: str | None = None,
) -> list[dict[str, Any]]:
    """Run objects, newest first, each with its metrics as top-level fields (e.g. ``top1``)
    or, when ``nested``, under ``metrics``. ``where`` keeps the runs it matches; ``after`` (a
    run id or unique prefix) starts the page with the run listed after that one (keyset
    paging: the next page of a list is ``after=`` its last run's id)."""
    from pinbench.db.chunks import chunked

    with ws.transaction() as session:
        last = find_run(session, after) if after is not None else None
        listing: Listing = select(*_LISTED).order_by(Run.started_at.desc(), Run.id.desc())
        stmt = narrowed(session, listing, where or RunFilter())
        if stmt is None:  # no run has the combination the filter asks for
            return []
        if last is not None:
            stmt = stmt.where(tuple_(Run.started_at, Run.id) < tuple_(last.started_at, last.id))
        if limit is not None:
            stmt = stmt.limit(limit)
        rows = session.execute(stmt).all()  # off one index, the page's rows only
        ids = [row.id for row in rows]
        metrics: dict[str, dict[str, float]] = {i: {} for i in ids}
        for chunk in chunked(ids):  # every run (no limit) may be more ids than one IN binds
            for run_id, metric, value in session.execute(
                select(Result.run_id, Result.metric, Result.value)
                .where(Result.run_id.in_(chunk))
                .order_by(Result.id)
            ):
                metrics[run_id][metric] = value
        locks: dict[str, Lockfile] = {}  # a page's runs share few lockfiles: parsed once each
        for chunk in chunked(sorted({row.lockfile_digest for row in rows})):
            for digest, body in session.execute(
                select(LockfileRow.digest, LockfileRow.body).where(LockfileRow.digest.in_(chunk))
            ):
                locks[digest] = _parsed(digest, body)
        return [
            _summary(row, locks[row.lockfile_digest], metrics[row.id], nested=nested)
            for row in rows
        ]


@functools.lru_cache(maxsize=256)
def _parsed(digest: str, body: str) -> Lockfile:
    """A stored lockfile, parsed (about 2 ms each): pages of a listing mostly show the same
    few lockfiles again, and a lockfile (a frozen value, keyed by its digest and its very
    text) never changes."""
    return Lockfile.from_bytes(body.encode())


_LISTED = (
    Run.id,
    Run.status,
    Run.runner,
    Run.system,
    Run.retry_of,
    Run.environment_digest,
    Run.lockfile_digest,
    Run.trace_level,
    Run.started_at,
    Run.finished_at,
    Run.error,
)
"""The columns a run's summary shows (``_summary``): a listing reads these, not whole rows."""


def show_run(ws: Workspace, run_id: str, *, nested: bool = False) -> dict[str, Any]:
    """One run: its summary plus host facts, details, units and the lockfile (metrics as in
    ``list_runs``)."""
    with ws.transaction() as session:
        run = find_run(session, run_id)
        body = session.get(LockfileRow, run.lockfile_digest)
        assert body is not None
        lock = Lockfile.from_bytes(body.body.encode())
        out = _summary(run, lock, {r.metric: r.value for r in run.results}, nested=nested)
        out["host"] = run.host
        out["details"] = run.details
        out["units"] = {r.metric: r.unit for r in run.results}
        out["latencies_sha256"] = run.latencies_sha256
        out["trace_sha256"] = run.trace_sha256
        out["lockfile_body"] = lock.to_json()
        return out


def differing(infos: list[dict[str, Any]]) -> list[str]:
    """Which of ``COMPARED`` are not the same in every run."""
    return [k for k in COMPARED if len({str(i[k]) for i in infos}) > 1]


def compare_runs(ws: Workspace, run_ids: list[str]) -> dict[str, Any]:
    """Runs side by side: their ids, which inputs differ, each metric per run (None where a
    run lacks it). Runs of different models or scenarios are compared, the differences named."""
    if len(run_ids) < 2:
        raise UserError("compare needs at least two runs")
    infos = [show_run(ws, r) for r in run_ids]
    metrics = sorted({k for i in infos for k in i["units"]})
    return {
        "runs": [i["id"] for i in infos],
        "differs": differing(infos),
        "metrics": {m: [i.get(m) for i in infos] for m in metrics},
        "infos": infos,
    }
