"""What segmentation records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("miou", "mIoU", headline=True),
    Metric("pixel_accuracy", "pixel accuracy"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
