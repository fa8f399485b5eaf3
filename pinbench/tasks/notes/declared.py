"""What note transcription records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("note_f1", "note F1", headline=True),
    Metric("note_precision", "note precision"),
    Metric("note_recall", "note recall"),
    Metric("note_offset_f1", "note F1 with offsets"),
    Metric("note_offset_precision", "note precision with offsets"),
    Metric("note_offset_recall", "note recall with offsets"),
    Metric("notes_count", "reference notes", unit="count"),
    Metric("estimated_notes_count", "estimated notes", unit="count"),
)
FORMAT = "note-events"
DATASETS = Datasets(
    (FORMAT,),
    by_file_name=(FORMAT,),
    needs_path="{format} labels need `path`: the JSON-lines file of notes",
    refuses=("classes", "names"),
    refused="{format} labels have no classes: `{field}` does not apply",
)
