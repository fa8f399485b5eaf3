"""What text recognition records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("cer", "CER", unit="ratio", higher_is_better=False, headline=True),
    Metric("wer", "WER", unit="ratio", higher_is_better=False),
    Metric("exact_match", "exact match"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
DATASETS = Datasets(
    ("text-txt", "text-csv", "text-jsonl"),
    by_file_name=("text-csv", "text-jsonl"),
    needs_path="labels of format {format} need `path`: the texts file",
    refuses=("classes", "names"),
    refused="text labels are each sample's text, not classes: leave out `classes` and `names`",
)
