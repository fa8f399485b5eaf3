"""Network transformations (L1) in a report: transformation x framework, with the error
against the untransformed network, whether it is valid, time and peak memory.

Read from what a run recorded (``details["transform"]``, ``transforms.result.TransformRecord``).
An invalid transformation (outside its dtype's tolerance) shows its errors and its reason,
never a time or a memory figure: it is not reported as fast or small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.metric_names import fmt_sig
from pinbench.reports.data import Report

HEAD = ["transformation", "framework", "compared", "max abs err", "max rel err", "L2 err"]
HEAD += ["valid", "time (s)", "untransformed (s)", "peak memory (KiB)", "untransformed (KiB)"]


@dataclass(frozen=True, slots=True)
class TransformRow:
    transform: str
    framework: str
    compared: str
    max_abs_err: str
    max_rel_err: str
    l2_err: str
    valid: str
    """``✓``, or ``✗`` and the reason."""
    time_s: str
    reference_time_s: str
    peak_kib: str
    reference_peak_kib: str

    def cells(self) -> list[str]:
        return [
            *(self.transform, self.framework, self.compared),
            *(self.max_abs_err, self.max_rel_err, self.l2_err, self.valid),
            *(self.time_s, self.reference_time_s, self.peak_kib, self.reference_peak_kib),
        ]


def transform_of(run_info: dict[str, Any]) -> dict[str, Any] | None:
    found = (run_info.get("details") or {}).get("transform")
    return found if isinstance(found, dict) else None


def transform_row(record: dict[str, Any]) -> TransformRow:
    """One row from a ``TransformRecord``'s plain data."""
    c = record.get("comparison") or {}
    valid = bool(c.get("valid"))
    mark = "✓" if valid else "✗ " + _reason(c)

    def shown(value: Any, digits: str | None = None, scale: float = 1.0) -> str:
        if value is None or not valid:
            return ""
        return (
            fmt_sig(float(value) / scale)
            if digits is None
            else format(float(value) / scale, digits)
        )

    return TransformRow(
        transform=str(record.get("transform", "")),
        framework=str(record.get("framework", "")),
        compared=str(record.get("compared", "")),
        max_abs_err=_err(c.get("max_abs_err")),
        max_rel_err=_err(c.get("max_rel_err")),
        l2_err=_err(c.get("l2_err")),
        valid=mark,
        time_s=shown(record.get("time_s")),
        reference_time_s=shown(record.get("reference_time_s")),
        peak_kib=shown(record.get("peak_bytes"), ",.1f", 1024),
        reference_peak_kib=shown(record.get("reference_peak_bytes"), ",.1f", 1024),
    )


def transform_table(report: Report) -> list[TransformRow]:
    """A row per run that validated a transformation, in the report's order."""
    return [transform_row(t) for r in report.runs if (t := transform_of(r.info)) is not None]


def transform_markdown(rows: list[TransformRow]) -> list[str]:
    """The "Network transformations (L1)" section; empty without rows."""
    if not rows:
        return []
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r.cells()) + " |" for r in rows]
    note = "An invalid transformation (outside its dtype's tolerance) shows no time or memory."
    return ["## Network transformations (L1)", "", *lines, "", note, ""]


def _err(value: Any) -> str:
    return "" if value is None else format(float(value), ".2e")


def _reason(c: dict[str, Any]) -> str:
    return (
        f"outside tolerance (|t - r| <= {c.get('atol', 0):g} + {c.get('rtol', 0):g} * |r|, "
        f"{c.get('dtype', '')})"
    )
