"""What speech recognition records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("wer", "WER", unit="ratio", higher_is_better=False, headline=True),
    Metric("cer", "CER", unit="ratio", higher_is_better=False),
    Metric("exact_match", "exact match"),
    Metric("references_count", "references", unit="count"),
)
DATASETS = Datasets(
    ("transcript-txt", "transcript-csv", "transcript-jsonl"),
    by_file_name=("transcript-csv", "transcript-jsonl"),
    needs_path="labels of format {format} need `path`: the transcripts",
    refuses=("classes", "names"),
    refused="transcripts are each sample's text, not classes: leave out `classes` and `names`",
    generates=True,
)
