"""What token classification records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("entity_f1", "entity F1", headline=True),
    Metric("entity_precision", "entity precision"),
    Metric("entity_recall", "entity recall"),
    Metric("entities_count", "entities", unit="count"),
    Metric("predicted_entities_count", "predicted entities", unit="count"),
)
