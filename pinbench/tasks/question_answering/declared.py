"""What extractive question answering records: its metrics, as data
(``pinbench.tasks.metrics``), read by whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("squad_f1_pct", "SQuAD v1.1 F1 (0-100)", unit="value", headline=True),
    Metric("squad_exact_match_pct", "SQuAD v1.1 exact match (0-100)", unit="value"),
    Metric("questions_count", "questions scored", unit="count"),
    Metric("features_count", "features (model rows) scored", unit="count"),
)
