"""Change points found when a run is recorded become alerts (decision 253).

After a server records a succeeded run (a local home: after ``pinbench run`` records one), each
metric of its series that has a threshold is searched for change points
(``changepoints.change_points``: ruptures' KernelCPD, permutation-tested, over the values of the
series' runs with the run's settings, ``members.alike``, oldest first, less the runs LoadGen
called INVALID); every change point not alerted yet is an alert at the first run after it, with
the pins that moved between the two runs (bisect's view of their lockfiles). Metrics without a
threshold are not searched: a threshold is how a team says a metric matters. A change point
whose segments (from the change point before it to the one after it) hold a run already alerted
for the metric is the same shift, placed a run or two apart as the series grew: it is not
alerted again. A failure here is logged and never fails the run (the run's record is already
written).

The work is bounded: only the newest ``SEARCHED_RUNS`` runs having the metric are searched, at
the threshold's alpha or ``bounds.CHANGE_SIGNIFICANCE``'s floor (0.001) when alpha is smaller,
and a server's watch stops after ``WATCH_S`` seconds (``watch_quietly``), after the run's
slot is released.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pinbench import bounds
from pinbench.series.alerts import alerted_runs, raise_alert
from pinbench.series.changepoints import change_points
from pinbench.series.members import alike, key_of_run, moved, no_result, series_of_run
from pinbench.series.thresholds import thresholds
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.series")

SEARCHED_RUNS = 200
"""The newest runs of a series that a watch searches (a kernel search is quadratic in them)."""

WATCH_S = 60.0
"""Seconds a server's watch of one recorded run may take, all its metrics together."""
LOCAL_WATCH_S = 20.0
"""The same after ``pinbench run`` in a local home, whose user waits for it."""


def watch_run(ws: Workspace, run_id: str, *, deadline: float | None = None) -> list[dict[str, Any]]:
    """The alerts raised for change points in ``run_id``'s series (none when it belongs to
    no series, or its series has no threshold); each alert is raised once.
    ``ChangePointsTimedOut`` past ``deadline`` (a ``time.monotonic()`` value)."""
    key = key_of_run(ws, run_id)
    current = thresholds(ws, key)
    if not current:  # nothing to search: the series' runs are not read (every local run)
        return []
    _, members = series_of_run(ws, run_id)
    members = alike(members, next(m for m in members if m.run_id == run_id))
    # LoadGen's INVALID runs are no result; an UNSANDBOXED run's figures are its own word
    members = [m for m in members if not no_result(m)]
    raised = []
    for versioned in current:
        metric = versioned.threshold.metric
        having = [m for m in members if metric in m.metrics][-SEARCHED_RUNS:]
        if len(having) < 4:  # two runs each side at least
            continue
        found = change_points(
            [m.metrics[metric] for m in having],
            significance=max(versioned.threshold.alpha, bounds.CHANGE_SIGNIFICANCE.low),
            deadline=deadline,
        )
        done = alerted_runs(ws, series=str(key), metric=metric, kind="change-point")
        where = {m.run_id: i for i, m in enumerate(having)}
        edges = [0, *(p.index for p in found), len(having)]
        for k, point in enumerate(found):
            before, after = having[point.index - 1], having[point.index]
            if after.run_id in done:
                continue  # alerted already: not said again as a new one
            near = {where[r] for r in done if r in where and r != after.run_id}
            if any(edges[k] < i < edges[k + 2] for i in near):
                continue  # the same shift, alerted at a nearby run as the series grew
            raised.append(
                raise_alert(
                    ws,
                    series=str(key),
                    metric=metric,
                    kind="change-point",
                    run_id=after.run_id,
                    detail={
                        "before": point.before,
                        "after": point.after,
                        "change": point.change,
                        "previous_run": before.run_id,
                        "moved": moved(before, after),
                        "reason": f"{metric} shifted {point.change:+.1%} at run "
                        f"{after.run_id[:8]} (mean {point.before:.6g} -> {point.after:.6g})",
                        "threshold_version": versioned.version,
                    },
                )
            )
    return raised


def watch_quietly(
    ws: Workspace,
    run_id: str,
    *,
    seconds: float = WATCH_S,
    say: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """``watch_run`` for a server, and for a run recorded in a local home (``Lockfile.run``,
    with ``LOCAL_WATCH_S`` and its ``say``): the alerts raised; a run that is in no series is
    skipped, any error logged; a search past ``seconds`` is said (``say``), not only logged."""
    from pinbench.errors import PinbenchError
    from pinbench.series.changepoints import ChangePointsTimedOut

    try:
        return watch_run(ws, run_id, deadline=time.monotonic() + seconds)
    except ChangePointsTimedOut as exc:
        log.info("run %s: %s", run_id[:8], exc)
        if say is not None:
            say(f"the change-point search of run {run_id[:8]}'s series stopped: {exc}")
    except PinbenchError as exc:
        log.debug("run %s: no change-point watch: %s", run_id[:8], exc)
    except Exception:
        log.exception("run %s: the change-point watch failed", run_id[:8])
    return []
