"""What image-to-image records (its metrics and datasets, as data: naming a run's metrics or
checking a dataset imports no task); the task is ``tasks.signals``."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric
from pinbench.tasks.signals.declared import declared

FORMAT = "reference-image-npy"
METRICS, DATASETS = declared(
    Metric("psnr_db", "PSNR (dB)", unit="value", headline=True),
    Metric("ssim", "SSIM", unit="value"),
    FORMAT,
)
