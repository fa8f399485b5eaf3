"""The demo's bisect: which digits-logreg version moved top-1 (``pinbench bisect``).

Two accuracy runs, the catalog's logistic regression at 1.0.0 and at 1.2.0 (yanked: an exact
pin still gets it), differ in top-1; the bisect locks and runs the one published version in
between (1.1.0) and names the first version at which top-1 changes. On a demo run again, the
1.1.0 run recorded the first time is reused.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from pinbench.catalog.digits import DATASET_NAME, MODEL_NAME
from pinbench.cli.bisect import print_bisection
from pinbench.evaluator.bisect import bisect
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace

GOOD, BAD = "1.0.0", "1.2.0"


def _accuracy_run(ws: Workspace, version: str) -> str:
    """An accuracy run of the logreg at exactly ``version`` (local runner); its id."""
    request = parse_request(
        {
            "model": f"{MODEL_NAME}@={version}",
            "dataset": f"{DATASET_NAME}@1",
            "scenario": {"mode": "accuracy"},
        }
    )
    return run_lockfile(ws, service.lock(ws, request)[0], say=lambda text: None).id


def show_bisect(ws: Workspace, out: Console, step: Callable[[str], None]) -> None:
    """Run the two endpoint runs, bisect them on top-1 and print the evidence (``ws`` has the
    built-in catalog published)."""
    good, bad = _accuracy_run(ws, GOOD), _accuracy_run(ws, BAD)
    step(f"pinbench bisect {good[:8]} {bad[:8]} --metric accuracy ({MODEL_NAME} {GOOD} vs {BAD})")
    result = bisect(ws, good, bad, metric="accuracy", say=lambda text: None)
    print_bisection(result, out)
