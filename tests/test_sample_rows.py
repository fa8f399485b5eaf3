"""A run's per-sample rows are shown as its task recorded them (``run_samples.py``):
whatever the task, each key a column, ``K_name`` in ``K``'s cell, ``right`` marking the row."""

from __future__ import annotations

from pinbench.run_samples import sample_rows


def test_recorded_rows_become_columns_with_names_and_marks() -> None:
    recorded = {
        "samples": [
            {"sample": "a.png", "truth": 3, "top1": 3, "score": 0.91234, "right": True},
            {"sample": "b.png", "truth": 1, "top1": 2, "score": None, "right": False},
            {"sample": "c.png", "truth": 0, "top1": 0, "truth_name": "cat", "top1_name": "cat"},
            {"sample": 4, "text": "hello", "decoded": "hallo", "cer": 0.2},  # another task's
        ]
    }
    shown = sample_rows(recorded, limit=3)
    assert shown is not None
    assert shown.header == ["sample", "truth", "top1", "score"]
    assert shown.rows == [
        ["a.png", "3", "3", "0.9123"],
        ["b.png", "1", "2", "-"],
        ["c.png", "0 cat", "0 cat", "-"],
    ]
    assert shown.right == [True, False, None]
    named = sample_rows(recorded, limit=3, names_only=True)
    assert named is not None and named.rows[2][1:3] == ["cat", "cat"]
    other = sample_rows({"samples": recorded["samples"][3:]})
    assert other is not None and other.header == ["sample", "text", "decoded", "cer"]
    assert sample_rows({}) is None and sample_rows({"samples": "x"}) is None
