"""What speaker verification records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("eer", "EER", higher_is_better=False, headline=True),
    Metric("min_dcf", "minDCF", unit="value", higher_is_better=False),
    Metric("trials_count", "trials", unit="count"),
    Metric("target_trials_count", "target trials", unit="count"),
)
FORMAT = "speaker-trials"
DATASETS = Datasets(
    (FORMAT,),
    by_file_name=(FORMAT,),
    needs_path="{format} labels need `path`: the trial list",
    refuses=("classes", "names"),
    refused="{format} labels have no classes: `{field}` does not apply",
)
