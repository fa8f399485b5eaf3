"""What audio-to-audio records (its metrics and datasets, as data: naming a run's metrics or
checking a dataset imports no task); the task is ``tasks.signals``."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric
from pinbench.tasks.signals.declared import declared

FORMAT = "reference-audio-npy"
METRICS, DATASETS = declared(
    Metric("si_sdr_db", "SI-SDR (dB)", unit="value", headline=True),
    Metric("snr_db", "SNR (dB)", unit="value"),
    FORMAT,
)
