"""Side-by-side diff of runs' lockfiles and environments: every leaf as a dotted path, and
the paths whose values are not the same in every run; and the hardware facts (CPU, cores,
memory, GPU, driver, accelerator libraries) that differ between the runs' machines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pinbench.reports.hardware import FACTS

MISSING = "(absent)"
RESULT_DETAILS = frozenset(
    {
        "loadgen",
        "loadgen_logs",
        "audits",
        "clock",
        "outputs_sha256",
        "preprocess_cache_hit",
        "trace",
    }
)
"""Details that are outcomes of the run, not inputs or environment: left out of the diff."""


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": [1, 2]}}`` -> ``{"a.b[0]": "1", "a.b[1]": "2"}``; leaves as JSON text
    (so ``1`` and ``"1"`` differ); an empty mapping or list is a leaf of its own."""
    if isinstance(value, dict) and value:
        out: dict[str, str] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix: json.dumps(value, sort_keys=True)}


@dataclass(frozen=True, slots=True)
class DiffRow:
    path: str
    values: list[str]
    """One per run, in the runs' order; ``MISSING`` where a run has no such path."""


def diff(columns: list[dict[str, str]]) -> list[DiffRow]:
    """The paths (sorted) whose value is not the same in every column."""
    paths = sorted({p for c in columns for p in c})
    rows = []
    for path in paths:
        values = [c.get(path, MISSING) for c in columns]
        if len(set(values)) > 1:
            rows.append(DiffRow(path, values))
    return rows


def inputs_of(info: dict[str, Any]) -> dict[str, str]:
    """A run's lockfile and environment, flattened: ``lockfile.*`` (what was pinned),
    ``runner``, ``trace`` (its level), ``environment`` (its digest), ``host.*`` and
    ``details.*`` (as run)."""
    details = {k: v for k, v in (info.get("details") or {}).items() if k not in RESULT_DETAILS}
    return flatten(
        {
            "lockfile": info["lockfile_body"],
            "runner": info["runner"],
            "trace": info.get("trace", "none"),
            "environment": info["environment"],
            "host": info.get("host") or {},
            "details": details,
        }
    )


def run_diff(infos: list[dict[str, Any]]) -> list[DiffRow]:
    return diff([inputs_of(i) for i in infos])


@dataclass(frozen=True, slots=True)
class HardwareRow:
    fact: str
    """Its label (``reports.hardware.FACTS``): CPU model, cores, memory, GPU model, ..."""
    values: list[str]
    """One per run, in the runs' order."""
    differs: bool


def hardware_rows(machines: list[dict[str, str]]) -> list[HardwareRow]:
    """Each hardware fact of each run's machine (``reports.hardware.hardware``), marked where
    it is not the same on every run."""
    return [
        HardwareRow(label, values, len(set(values)) > 1)
        for key, label in FACTS
        for values in ([m[key] for m in machines],)
    ]
