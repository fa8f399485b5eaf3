"""Change points found when a run is recorded on a server become alerts (decision 253).

After a server records a succeeded run, each metric of its series that has a threshold is
searched for change points (``changepoints.change_points``, E-Divisive over the series' values,
oldest first); every change point not alerted yet is an alert at the first run after it, with
the pins that moved between the two runs (bisect's view of their lockfiles). Metrics without a
threshold are not searched: a threshold is how a team says a metric matters. A failure here
is logged and never fails the run (the run's record is already written).
"""

from __future__ import annotations

import logging
from typing import Any

from pinbench.series.alerts import raise_alert
from pinbench.series.changepoints import change_points
from pinbench.series.members import moved, series_of_run
from pinbench.series.thresholds import thresholds
from pinbench.workspace import Workspace

log = logging.getLogger("pinbench.series")


def watch_run(ws: Workspace, run_id: str) -> list[dict[str, Any]]:
    """The alerts raised for change points in ``run_id``'s series (none when it belongs to
    no series, or its series has no threshold); each alert is raised once."""
    key, members = series_of_run(ws, run_id)
    raised = []
    for versioned in thresholds(ws, key):
        metric = versioned.threshold.metric
        having = [m for m in members if metric in m.metrics]
        if len(having) < 4:  # two runs each side at least
            continue
        found = change_points(
            [m.metrics[metric] for m in having], significance=versioned.threshold.alpha
        )
        for point in found:
            before, after = having[point.index - 1], having[point.index]
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


def watch_quietly(ws: Workspace, run_id: str) -> None:
    """``watch_run`` for a server: a run that is in no series is skipped, any error logged."""
    from pinbench.errors import PinbenchError

    try:
        watch_run(ws, run_id)
    except PinbenchError as exc:
        log.debug("run %s: no change-point watch: %s", run_id[:8], exc)
    except Exception:
        log.exception("run %s: the change-point watch failed", run_id[:8])
