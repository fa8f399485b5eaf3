"""Note-level precision, recall and F1 over every scored file, each from the number of matched
notes (``matching``), pooled over the files: with ``M`` notes matched, ``R`` reference notes
and ``E`` estimated notes in all,

- ``note_precision`` = M / E, undefined when the model gave no note;
- ``note_recall`` = M / R, undefined when the references hold no note;
- ``note_f1`` = 2PR / (P + R), 0 where both are 0 (``mir_eval.util.f_measure``, beta 1:
  2M / (R + E), computed from P and R as mir_eval computes it);

matched by onset and pitch (mir_eval's ``offset_ratio=None``), and the same three with
offsets, ``note_offset_precision``, ``note_offset_recall``, ``note_offset_f1`` (mir_eval's
default ``offset_ratio=0.2``). For one file they are
``mir_eval.transcription.precision_recall_f1_overlap``'s values exactly; over several, the
matches and notes are summed before dividing (a file with few notes weighs as few notes, and
a file with none is no undefined per-file figure). Where mir_eval returns 0 with a warning
(no reference or no estimated note), the run fails naming the metric (``UndefinedMetric``)."""

from __future__ import annotations

from collections.abc import Sequence

from pinbench.tasks.notes.matching import matched_count
from pinbench.tasks.notes.truth import Notes
from pinbench.worker.undefined import UndefinedMetric


def note_metrics(references: Sequence[Notes], estimates: Sequence[Notes]) -> dict[str, float]:
    """The metrics of each file's ``estimates`` against its ``references`` (same order)."""
    assert len(references) == len(estimates)
    reference_count = sum(len(r) for r in references)
    estimated_count = sum(len(e) for e in estimates)
    if reference_count == 0:
        raise UndefinedMetric(
            metric="note_recall", reason="the references of the scored files hold no note"
        )
    if estimated_count == 0:
        raise UndefinedMetric(
            metric="note_precision", reason="the model gave no note for any scored file"
        )
    metrics = {}
    for prefix, offsets in (("note", False), ("note_offset", True)):
        matched = sum(
            matched_count(r, e, offsets=offsets) for r, e in zip(references, estimates, strict=True)
        )
        precision = float(matched) / estimated_count
        recall = float(matched) / reference_count
        f1 = 0.0 if precision == recall == 0 else 2 * precision * recall / (precision + recall)
        metrics[f"{prefix}_f1"] = f1
        metrics[f"{prefix}_precision"] = precision
        metrics[f"{prefix}_recall"] = recall
    metrics["notes_count"] = float(reference_count)
    metrics["estimated_notes_count"] = float(estimated_count)
    return metrics
