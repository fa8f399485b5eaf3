"""What voice activity records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("frame_f1", "frame F1", headline=True),
    Metric("frame_precision", "frame precision"),
    Metric("frame_recall", "frame recall"),
    Metric("frame_roc_auc", "frame ROC-AUC"),
    Metric("frames_count", "frames scored", unit="count"),
)
