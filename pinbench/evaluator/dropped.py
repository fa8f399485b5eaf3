"""The figures the host dropped from what a worker sent, named in the run's details (issue 71,
item 4: the host records only what it defines)."""

from __future__ import annotations

from typing import Any

DROPPED = "dropped_metrics"
"""Where a run names the figures its evaluator sent that the host does not record."""


def name_dropped(details: dict[str, Any], names: list[str]) -> None:
    """Name ``names`` among the figures the host dropped (``DROPPED``: every host step that
    drops one adds to the list; a worker's own list never reaches it: ``results``)."""
    named = set(details.get(DROPPED) or []) | set(names)
    if named:
        details[DROPPED] = sorted(named)
