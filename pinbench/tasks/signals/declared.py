"""What the signal tasks' declarations share (``tasks.audio_to_audio.declared``,
``tasks.image_to_image.declared``): a reference signal per sample, in one ``.npy`` array."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric


def declared(headline: Metric, other: Metric, fmt: str) -> tuple[tuple[Metric, ...], Datasets]:
    """A signal task's metrics (its headline, one other, the samples scored) and datasets
    (labels of format ``fmt``, a path needed, no classes)."""
    count = Metric("accuracy_samples_count", "samples scored", unit="count", exact=False)
    datasets = Datasets(
        (fmt,),
        needs_path="{format} labels need `path`: the .npy array of one reference signal per sample",
        refuses=("classes", "names"),
        refused="{format} labels are reference signals, not classes: `{field}` does not apply",
    )
    return (headline, other, count), datasets
