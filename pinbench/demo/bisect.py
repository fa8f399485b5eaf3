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
from pinbench.sdk.registry import Registry

GOOD, BAD = "1.0.0", "1.2.0"


def _accuracy_run(reg: Registry, version: str) -> str:
    """An accuracy run of the logreg at exactly ``version`` (local runner); its id."""
    request = {
        "model": f"{MODEL_NAME}@={version}",
        "dataset": f"{DATASET_NAME}@1",
        "scenario": {"mode": "accuracy"},
    }
    return reg.lock(request)[0].run(runner="local").id


def show_bisect(reg: Registry, out: Console, step: Callable[[str], None]) -> None:
    """Run the two endpoint runs, bisect them on top-1 and print the evidence (``reg`` has
    the built-in catalog published)."""
    good, bad = _accuracy_run(reg, GOOD), _accuracy_run(reg, BAD)
    step(f"pinbench bisect {good[:8]} {bad[:8]} --metric accuracy ({MODEL_NAME} {GOOD} vs {BAD})")
    result = reg.bisect(good, bad, metric="accuracy")
    print_bisection(result, out)
