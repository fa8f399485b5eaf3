"""How long a study's cell waits for its agent to come back (issue 85, item 3): the cells of an
agent that is gone from the cluster wait for it, one wait per agent, and a cell whose run was
lost with it runs again once it is back (``study_runs``)."""

from __future__ import annotations

from pinbench.errors import UserError

LOST_RUNS = 2
"""Runs of one cell that may be lost with their agent (each run again once it is back)
before the cell fails with the last one's error."""
WAITING = "waiting for agent {} to come back"
AGENT_POLL_S = 1.0
AGENT_WAIT_ENV = "PINBENCH_STUDY_AGENT_WAIT_S"
AGENT_WAIT_S = 600.0
"""How long a cell waits for its agent to come back (``PINBENCH_STUDY_AGENT_WAIT_S``)."""


def agent_wait_s() -> float:
    """``AGENT_WAIT_S``, or ``PINBENCH_STUDY_AGENT_WAIT_S``: seconds, 0 to 86,400 (a bad value
    is refused when the server starts: ``serve`` asks this first)."""
    import math
    import os

    text = os.environ.get(AGENT_WAIT_ENV)
    if text is None:
        return AGENT_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 86_400.0:
        raise UserError(f"{AGENT_WAIT_ENV}={text[:40]!r}: seconds from 0 to 86400")
    return value
