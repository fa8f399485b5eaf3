"""What classification records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("top1", "top-1", per_output=True, headline=True),
    Metric("top5", "top-5", per_output=True),
    Metric("binary_accuracy", "accuracy", headline=True),
    Metric("binary_f1", "F1"),
    Metric("binary_roc_auc", "ROC-AUC"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
