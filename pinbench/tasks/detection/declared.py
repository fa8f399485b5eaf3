"""What detection records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.detection.stats import MASK_STATS, STATS
from pinbench.tasks.metrics import Metric

METRICS = (
    *(Metric(s.name, s.label, headline=s.name == "map") for s in STATS),
    *(Metric(s.name, s.label) for s in MASK_STATS),
    Metric("detections_count", "detections", unit="count"),
    Metric("accuracy_samples_count", "samples scored", unit="count", exact=False),
)
DATASETS = Datasets(
    ("coco-json",),
    by_file_name=("coco-json",),
    needs_path="{format} labels need `path`: the COCO JSON file",
)
