"""What detection records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

from pinbench.tasks.detection.stats import MASK_STATS, STATS
from pinbench.tasks.metrics import Metric

METRICS = (
    *(Metric(s.name, s.label, headline=s.name == "map") for s in STATS),
    *(Metric(s.name, s.label) for s in MASK_STATS),
    Metric("detections_count", "detections", unit="count"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
