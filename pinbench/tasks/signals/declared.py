"""What the signal tasks share in their declarations (``tasks.audio_to_audio.declared``,
``tasks.image_to_image.declared``)."""

from __future__ import annotations

from pinbench.tasks.metrics import Metric

COUNT = Metric("accuracy_samples_count", "samples scored", unit="count", exact=False)
NEEDS_PATH = "{format} labels need `path`: the .npy array of one reference signal per sample"
REFUSED = "{format} labels are reference signals, not classes: `{field}` does not apply"
