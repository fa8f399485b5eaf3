"""Run facets (decision 158): the combinations of a run's filter columns, kept by the
database's trigger (migration 0013), and the check that every run is filed under its own."""

from __future__ import annotations

from sqlalchemy import and_, func, not_, or_, select
from sqlalchemy.orm import Session

from pinbench.db.models import Run, RunFacet

FACET_COLUMNS = ("model", "model_version", "framework", "framework_version", "status", "system")


def misfiled(session: Session, limit: int = 100) -> tuple[list[str], int]:
    """Ids of runs (the first ``limit``) whose facet is missing or names other values than the
    run's own columns, and how many there are: a filtered listing would show them where they
    do not belong or miss them. The trigger of migration 0013 keeps this empty; ``pinbench
    fsck`` reports it."""
    same = and_(
        *(
            func.coalesce(getattr(RunFacet, c), "") == func.coalesce(getattr(Run, c), "")
            for c in FACET_COLUMNS
        )
    )
    wrong = (
        select(Run.id)
        .outerjoin(RunFacet, RunFacet.id == Run.facet_id)
        .where(or_(RunFacet.id.is_(None), not_(same)))
    )
    first = list(session.scalars(wrong.order_by(Run.id).limit(limit)))
    if len(first) < limit:
        return first, len(first)
    return first, session.scalar(select(func.count()).select_from(wrong.subquery())) or 0
