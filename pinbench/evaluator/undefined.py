"""The error of a metric that has no value for what was measured (pycocotools' -1, a rank
correlation of constant values, an accuracy over no samples): the run fails with it and
records no number (decision 115)."""

from __future__ import annotations

from pinbench.errors import UserError


class UndefinedMetric(UserError):
    """``metric`` is undefined for this run; ``reason`` says why, in the task's words."""

    def __init__(self, *, metric: str, reason: str) -> None:
        super().__init__(f"metric {metric} is undefined: {reason}")
        self.metric = metric
        self.reason = reason
