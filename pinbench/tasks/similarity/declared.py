"""What sentence similarity records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("spearman", "Spearman", unit="ratio", headline=True),
    Metric("pairs_count", "pairs", unit="count"),
)
DATASETS = Datasets(("similarity-pairs",), needs_path="{format} labels need `path`: the pairs file")
