"""What text recognition records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("cer", "CER", unit="ratio", higher_is_better=False, headline=True),
    Metric("wer", "WER", unit="ratio", higher_is_better=False),
    Metric("exact_match", "exact match"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
