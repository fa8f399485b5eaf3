"""The error of a metric that has no value for what was measured (pycocotools' -1, a rank
correlation of constant values, an accuracy over no samples): the run fails with it and
records no number (decision 115).

A metric that only describes part of what was measured (COCO's AP of small objects, when the
dataset has none) does not fail the run: it is left out of the metrics and its reason kept
in the run's details under ``DETAILS_KEY``, ``{metric: reason}``, which ``runs show``, reports
and the web UI show as "undefined" (decision 165)."""

from __future__ import annotations

from pinbench.errors import UserError

DETAILS_KEY = "undefined_metrics"
"""Where a run's details name the metrics it left out as undefined, each with its reason."""


class UndefinedMetric(UserError):
    """``metric`` is undefined for this run; ``reason`` says why, in the task's words."""

    def __init__(self, *, metric: str, reason: str) -> None:
        super().__init__(f"metric {metric} is undefined: {reason}")
        self.metric = metric
        self.reason = reason
