"""What speaker verification records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("eer", "EER", higher_is_better=False, headline=True),
    Metric("min_dcf", "minDCF", unit="value", higher_is_better=False),
    Metric("trials_count", "trials", unit="count"),
    Metric("target_trials_count", "target trials", unit="count"),
)
