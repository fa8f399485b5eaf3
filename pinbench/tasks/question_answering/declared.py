"""What extractive question answering records: its metrics (``pinbench.tasks.metrics``) and its
datasets (``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset
reads them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("squad_f1_pct", "SQuAD v1.1 F1 (0-100)", unit="value", headline=True),
    Metric("squad_exact_match_pct", "SQuAD v1.1 exact match (0-100)", unit="value"),
    Metric("questions_count", "questions scored", unit="count"),
    Metric("features_count", "features (model rows) scored", unit="count"),
)
FORMAT = "squad-answers"
DATASETS = Datasets(
    (FORMAT,),
    needs_path="{format} labels need `path`: the answers, one line per question",
    refuses=("classes", "names"),
    refused="{format} labels are answer texts: `{field}` does not apply",
)
