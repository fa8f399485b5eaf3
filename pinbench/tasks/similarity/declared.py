"""What sentence similarity records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("spearman", "Spearman", unit="ratio", headline=True),
    Metric("pairs_count", "pairs", unit="count"),
)
