"""What voice activity records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("frame_f1", "frame F1", headline=True),
    Metric("frame_precision", "frame precision"),
    Metric("frame_recall", "frame recall"),
    Metric("frame_roc_auc", "frame ROC-AUC"),
    Metric("frames_count", "frames scored", unit="count"),
)
FORMAT = "speech-segments"
DATASETS = Datasets(
    (FORMAT,),
    by_file_name=(FORMAT,),
    needs_path="{format} labels need `path`: the JSON-lines file of speech spans",
    refuses=("classes", "names"),
    refused="{format} labels have no classes: `{field}` does not apply",
)
