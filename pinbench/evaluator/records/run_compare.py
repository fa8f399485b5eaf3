"""Runs side by side (``runs compare``, ``GET /api/v1/compare``): each run as ``run_view``
shows it, which inputs differ, and each metric per run. Plain SQL through ``show_run``: no
ORM."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.run_metrics import COMPARED

if TYPE_CHECKING:
    from pinbench.workspace import Workspace


def differing(infos: list[dict[str, Any]]) -> list[str]:
    """Which of ``COMPARED`` are not the same in every run."""
    return [k for k in COMPARED if len({str(i[k]) for i in infos}) > 1]


def compare_runs(ws: Workspace, run_ids: list[str]) -> dict[str, Any]:
    """Runs side by side: their ids, which inputs differ, each metric per run (None where a
    run lacks it). Runs of different models or scenarios are compared, the differences named."""
    from pinbench.evaluator.records.run_view import show_run

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
