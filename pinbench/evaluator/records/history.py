"""Reading recorded runs with the ORM where a caller holds a session: one run by its id or a
prefix (``find_run``). The listing is ``run_list``'s, one run's view ``run_view``'s and runs side
by side ``run_compare``'s, with plain SQL."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from pinbench.db.models import Run
from pinbench.evaluator.records.run_view import AmbiguousRun as AmbiguousRun
from pinbench.evaluator.records.run_view import RunNotFound as RunNotFound
from pinbench.evaluator.records.run_view import locate
from pinbench.evaluator.records.run_view import run_id_prefix as run_id_prefix
from pinbench.evaluator.records.run_view import run_kind as run_kind
from pinbench.evaluator.records.run_view import show_run as show_run


def find_run(session: Session, run_id: str) -> Run:
    """The one run whose id is or begins with ``run_id`` (``run_view.locate``, in the session's
    transaction), with its results; RunNotFound if none, AmbiguousRun if several."""
    from pinbench.db.plain import connection_rows

    (found,) = locate(connection_rows(session), run_id)
    run = session.scalars(
        select(Run).options(selectinload(Run.results)).where(Run.id == str(found))
    ).one()
    return run
