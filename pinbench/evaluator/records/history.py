"""Reading recorded runs: list (newest first) and show, as plain data for the CLI and API."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session, selectinload

from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Result, Run
from pinbench.errors import UserError
from pinbench.evaluator.records.run_filter import RunFilter
from pinbench.evaluator.records.run_view import RUN_ID_LEN, summary
from pinbench.evaluator.records.run_view import AmbiguousRun as AmbiguousRun
from pinbench.evaluator.records.run_view import RunNotFound as RunNotFound
from pinbench.evaluator.records.run_view import run_id_prefix as run_id_prefix
from pinbench.evaluator.records.run_view import run_kind as run_kind
from pinbench.evaluator.records.run_view import show_run as show_run
from pinbench.evaluator.records.run_where import Listing, narrowed
from pinbench.registry.lockfile import Lockfile
from pinbench.run_metrics import COMPARED
from pinbench.workspace import Workspace


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
            summary(row, locks[row.lockfile_digest], metrics[row.id], nested=nested) for row in rows
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
