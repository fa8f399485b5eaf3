"""What classification records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from dataclasses import replace

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("top1", "top-1", per_output=True, headline=True),
    Metric("top5", "top-5", per_output=True),
    Metric("binary_accuracy", "accuracy", headline=True),
    Metric("binary_f1", "F1"),
    Metric("binary_roc_auc", "ROC-AUC"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
FORMATS = (
    "class-index-npy",
    "class-index-txt",
    "class-index-csv",
    "class-index-jsonl",
    "imagefolder",
)
DATASETS = Datasets(FORMATS, by_file_name=("class-index-csv", "class-index-jsonl", "imagefolder"))
OTHER = replace(DATASETS, publishable=False)
"""``other``: classification's labels, read (performance runs, scored as classification where
the model declares classification outputs), never published."""
