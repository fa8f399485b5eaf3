"""What token classification records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("entity_f1", "entity F1", headline=True),
    Metric("entity_precision", "entity precision"),
    Metric("entity_recall", "entity recall"),
    Metric("entities_count", "entities", unit="count"),
    Metric("predicted_entities_count", "predicted entities", unit="count"),
)
FORMAT = "iob2-tags"
DATASETS = Datasets(
    (FORMAT,),
    needs_path="{format} labels need `path`: the tags, one line per sample",
    refuses=("classes", "names"),
    refused="{format} labels name their entity types in the tags: `{field}` does not apply "
    "(the label names are the model output's `labels` file)",
)
