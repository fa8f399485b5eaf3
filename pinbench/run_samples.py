"""A run's per-sample rows as text: what its task recorded in ``details.samples`` (e.g.
``tasks/classification/rows.py``), shown as recorded, whatever the task.

A row is a flat mapping; each key is a column, in the order the first rows give them. A key
``K_name`` beside ``K`` names ``K``'s value (a class index's class name) and is shown in
``K``'s cell. A boolean ``right`` says whether the row's prediction is right (a report marks
the row); a row without it is not marked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinbench.metric_names import fmt_sig

SHOWN = 20
"""Rows shown per run."""
RIGHT = "right"


@dataclass(frozen=True, slots=True)
class SampleRows:
    header: list[str]
    rows: list[list[str]]
    right: list[bool | None]
    """Per row: its prediction right, wrong, or not said."""


def sample_rows(
    details: Mapping[str, Any] | None, *, limit: int = SHOWN, names_only: bool = False
) -> SampleRows | None:
    """The first ``limit`` recorded rows as text cells (None when the run recorded none);
    ``names_only``: a named value shows its name alone."""
    found = (details or {}).get("samples")
    rows = [r for r in found[:limit] if isinstance(r, dict)] if isinstance(found, list) else []
    if not rows:
        return None
    keys = list(dict.fromkeys(k for r in rows for k in r))
    columns = [
        k for k in keys if k != RIGHT and not (k.endswith("_name") and k[: -len("_name")] in keys)
    ]
    return SampleRows(
        columns,
        [[_cell(r.get(k), r.get(f"{k}_name"), names_only) for k in columns] for r in rows],
        [r[RIGHT] if isinstance(r.get(RIGHT), bool) else None for r in rows],
    )


def _cell(value: Any, name: Any, names_only: bool) -> str:
    if name is not None:
        return str(name) if names_only else f"{_text(value)} {name}"
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return fmt_sig(value) if math.isfinite(value) else str(value)
    return str(value)
