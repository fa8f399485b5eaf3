"""What image-to-image records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric
from pinbench.tasks.signals.declared import COUNT, NEEDS_PATH, REFUSED

METRICS = (
    Metric("psnr_db", "PSNR (dB)", unit="value", headline=True),
    Metric("ssim", "SSIM", unit="value"),
    COUNT,
)
FORMAT = "reference-image-npy"
DATASETS = Datasets((FORMAT,), needs_path=NEEDS_PATH, refuses=("classes", "names"), refused=REFUSED)
