"""What note transcription records: its metrics, as data (``pinbench.tasks.metrics``), read by
whatever names or shows them without importing the task."""

from __future__ import annotations

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
