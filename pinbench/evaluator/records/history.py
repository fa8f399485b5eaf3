"""Reading recorded runs with the ORM where a caller holds a session: one run by its id or a
prefix (``find_run``), runs side by side (``compare_runs``). The listing is ``run_list``'s and one
run's view ``run_view``'s, with plain SQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from pinbench.db.models import Run
from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import AmbiguousRun as AmbiguousRun
from pinbench.evaluator.records.run_view import RunNotFound as RunNotFound
from pinbench.evaluator.records.run_view import locate
from pinbench.evaluator.records.run_view import run_id_prefix as run_id_prefix
from pinbench.evaluator.records.run_view import run_kind as run_kind
from pinbench.evaluator.records.run_view import show_run as show_run
from pinbench.run_metrics import COMPARED
from pinbench.workspace import Workspace


def find_run(session: Session, run_id: str) -> Run:
    """The one run whose id is or begins with ``run_id`` (``run_view.locate``, in the session's
    transaction), with its results; RunNotFound if none, AmbiguousRun if several."""
    from pinbench.db.plain import connection_rows

    (found,) = locate(connection_rows(session), run_id)
    run = session.scalars(
        select(Run).options(selectinload(Run.results)).where(Run.id == str(found))
    ).one()
    return run


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
