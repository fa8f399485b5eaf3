"""What segmentation records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("miou", "mIoU", headline=True),
    Metric("pixel_accuracy", "pixel accuracy"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
DATASETS = Datasets(("masks",), by_file_name=("masks",))
