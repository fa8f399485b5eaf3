"""Operator (L0) runs in a report: a table of operator specs x frameworks (median latency,
GFLOP/s, max relative error, valid) and a roofline plot (achieved GFLOP/s vs arithmetic
intensity) under the machine's measured roofs.

Everything is read from what the run recorded (``details["operator"]``, the contract of issue
22): a result outside tolerance is shown as invalid with its reason, never with a speed. The
roofs are measured, not looked up: the peak is the fastest valid matmul / batched-matmul run of
the report on that system, the memory roof the highest bytes/s of any valid run there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.reports.charts import HEIGHT, LEGEND, SCHEMA, WIDTH, Chart
from pinbench.reports.data import Report, RunData
from pinbench.shown import fmt_sig

PEAK_OPS = frozenset({"matmul", "batch_matmul", "gemm", "batched_matmul"})
"""Operators whose achieved FLOP/s measures the machine's peak compute (the roof)."""
SHORT_PARAMS = {
    "out_channels": "k",
    "kernel_h": "r",
    "kernel_w": "s",
    "padding": "pad",
    "dilation": "dil",
}
"""Conventional short names of conv2d's parameters, for a compact spec in a table cell."""


def operator_result(run: RunData) -> dict[str, Any] | None:
    """``details["operator"]``: the recorded OperatorResult (without its latencies)."""
    found = (run.info.get("details") or {}).get("operator")
    return found if isinstance(found, dict) else None


def operator_spec(run: RunData) -> dict[str, Any] | None:
    """The run's OperatorSpec as JSON: from its result, else from its lockfile's ``operator``
    section (a run that failed before recording a result)."""
    result = operator_result(run)
    spec = result.get("spec") if result else None
    if not isinstance(spec, dict):
        spec = (run.info.get("lockfile_body") or {}).get("operator")
    return spec if isinstance(spec, dict) else None


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return "x".join(map(str, value))
    return str(value)


def describe(spec: dict[str, Any]) -> str:
    """``conv2d n=1 c=64 h=56 w=56 k=64 r=3 s=3 stride=1 pad=1 ... float32 forward``."""
    params = " ".join(
        f"{SHORT_PARAMS.get(k, k)}={_value(v)}" for k, v in (spec.get("params") or {}).items()
    )
    parts = [str(spec.get("op", "?")), params, spec.get("dtype", ""), spec.get("direction", "")]
    return " ".join(p for p in parts if p)


def framework_of(run: RunData) -> str:
    result = operator_result(run)
    if result and result.get("framework"):
        return str(result["framework"])
    return (run.info.get("framework") or "unknown").split("@")[0]


def latency_text(ns: float) -> str:
    """A median latency for people: microseconds below a millisecond, else milliseconds."""
    if ns < 1e6:
        return f"{fmt_sig(ns / 1e3)} µs"
    return f"{fmt_sig(ns / 1e6)} ms"


def _valid(result: dict[str, Any] | None) -> bool:
    validation = (result or {}).get("validation") or {}
    return bool(validation.get("valid")) and (result or {}).get("flops_per_s") is not None


@dataclass(frozen=True, slots=True)
class OpCell:
    """One run: one framework on one spec. ``median`` and ``gflops`` are empty when invalid."""

    run_id: str
    median: str
    gflops: str
    max_rel_error: str
    valid: bool
    reason: str
    """Why it is invalid (the validation's reason, else the run's error); empty when valid."""

    @property
    def mark(self) -> str:
        return "✓" if self.valid else "✗"


@dataclass(frozen=True, slots=True)
class OpRow:
    spec: str
    system: str
    cells: list[OpCell | None]
    """One per framework of ``OpTable.frameworks``; None where that framework did not run it."""


@dataclass(frozen=True, slots=True)
class OpTable:
    frameworks: list[str]
    rows: list[OpRow]
    show_system: bool
    """The runs span systems: each row names its system."""


def cell(run: RunData) -> OpCell:
    result = operator_result(run)
    validation = (result or {}).get("validation") or {}
    rel = validation.get("max_rel_error")
    if result is None:
        rel_text = ""
    elif rel is None:
        rel_text = "inf"  # recorded as null: not finite (a NaN output, a shape mismatch)
    else:
        rel_text = f"{rel:.3g}"
    if result is not None and _valid(result):
        return OpCell(
            run_id=run.id,
            median=latency_text(float(result["median_ns"])),
            gflops=fmt_sig(float(result["flops_per_s"]) / 1e9),
            max_rel_error=rel_text,
            valid=True,
            reason="",
        )
    reason = (
        validation.get("reason")
        or run.info.get("error")
        or ("no result recorded" if result is None else "invalid")
    )
    return OpCell(run.id, "", "", rel_text, False, " ".join(str(reason).split()))


def operator_table(report: Report) -> OpTable | None:
    """One row per operator spec (and system, when runs span systems), a column group per
    framework; None when the report holds no operator run. Two runs of one spec and
    framework on one system (a rerun) take a row each, in the report's order."""
    runs = [r for r in report.runs if operator_spec(r) is not None]
    if not runs:
        return None
    frameworks = list(dict.fromkeys(framework_of(r) for r in runs))
    show_system = len({r.system for r in report.runs}) > 1
    rows: list[tuple[tuple[str, str], list[OpCell | None]]] = []
    for run in runs:
        spec = operator_spec(run)
        assert spec is not None
        key = (describe(spec), run.system if show_system else "")
        column = frameworks.index(framework_of(run))
        free = next((c for k, c in rows if k == key and c[column] is None), None)
        if free is None:
            free = [None] * len(frameworks)
            rows.append((key, free))
        free[column] = cell(run)
    return OpTable(
        frameworks=frameworks,
        rows=[OpRow(spec, system, cells) for (spec, system), cells in rows],
        show_system=show_system,
    )


@dataclass(frozen=True, slots=True)
class Roof:
    """One system's measured roofs and the runs that set them."""

    system: str
    peak_flop_per_s: float
    peak_from: str
    bandwidth_byte_per_s: float
    bandwidth_from: str

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the memory roof meets the peak."""
        return self.peak_flop_per_s / self.bandwidth_byte_per_s


def _who(run: RunData) -> str:
    spec = operator_spec(run) or {}
    return f"{describe(spec)} {framework_of(run)} (run {run.id[:8]})"


def roofs(report: Report) -> tuple[dict[str, Roof], list[str]]:
    """Per system: its roofs, from the report's valid runs there; and the systems with valid
    operator runs but no valid matmul run (no roof can be measured for them)."""
    by_system: dict[str, list[tuple[RunData, dict[str, Any]]]] = {}
    for run in report.runs:
        result = operator_result(run)
        if result is not None and _valid(result):
            by_system.setdefault(run.system, []).append((run, result))
    out: dict[str, Roof] = {}
    missing: list[str] = []
    for system, members in by_system.items():
        matmuls = [(r, m) for r, m in members if (m.get("spec") or {}).get("op") in PEAK_OPS]
        moving = [(r, m) for r, m in members if m.get("bytes_per_s")]
        if not matmuls or not moving:
            missing.append(system)
            continue
        peak_run, peak = max(matmuls, key=lambda p: float(p[1]["flops_per_s"]))
        bw_run, bw = max(moving, key=lambda p: float(p[1]["bytes_per_s"]))
        out[system] = Roof(
            system=system,
            peak_flop_per_s=float(peak["flops_per_s"]),
            peak_from=_who(peak_run),
            bandwidth_byte_per_s=float(bw["bytes_per_s"]),
            bandwidth_from=_who(bw_run),
        )
    return out, missing


def roof_caption(found: dict[str, Roof], missing: list[str], *, name_systems: bool) -> str:
    """Which runs set each roof; or why a system has none."""
    parts = []
    for roof in found.values():
        where = f"{roof.system}: " if name_systems else ""
        parts.append(
            f"{where}peak {fmt_sig(roof.peak_flop_per_s / 1e9)} GFLOP/s from {roof.peak_from}; "
            f"memory roof {fmt_sig(roof.bandwidth_byte_per_s / 1e9)} GB/s from "
            f"{roof.bandwidth_from}"
        )
    for system in missing:
        where = f"{system}: " if name_systems else ""
        parts.append(
            f"{where}no roof: no valid matmul or batch_matmul run here to measure the peak from"
        )
    return ". ".join(parts) + "."


def _roof_line(roof: Roof, low: float, high: float) -> list[dict[str, Any]]:
    """The roof as points (straight segments on log-log axes): y = bandwidth * x up to the
    ridge, then the peak."""
    xs = sorted({low, high, *([roof.ridge] if low < roof.ridge < high else [])})
    return [
        {
            "roof": f"roof {roof.system}",
            "intensity": x,
            "gflops": min(roof.peak_flop_per_s, roof.bandwidth_byte_per_s * x) / 1e9,
        }
        for x in xs
    ]


def roofline(report: Report) -> Chart:
    """Achieved GFLOP/s vs arithmetic intensity (both log), a point per valid operator run
    coloured by framework, under each system's measured roofs (``roofs``)."""
    title = "Roofline: achieved GFLOP/s vs arithmetic intensity"
    name_systems = len({r.system for r in report.runs}) > 1
    points: list[dict[str, Any]] = []
    for run in report.runs:
        result = operator_result(run)
        if result is None or not _valid(result) or not result.get("intensity"):
            continue
        points.append(
            {
                "framework": framework_of(run),
                "operator": describe(result.get("spec") or {}),
                "run": run.id[:8],
                "system": run.system,
                "intensity": float(result["intensity"]),
                "gflops": float(result["flops_per_s"]) / 1e9,
            }
        )
    if not points:
        return Chart("roofline", title, None, "no valid operator run here to place on a roofline")
    found, missing = roofs(report)
    low = min(p["intensity"] for p in points) / 2
    high = max(p["intensity"] for p in points) * 2
    for roof in found.values():
        low, high = min(low, roof.ridge / 2), max(high, roof.ridge * 2)
    lines = [row for roof in found.values() for row in _roof_line(roof, low, high)]
    log_x = {
        "field": "intensity",
        "type": "quantitative",
        "title": "arithmetic intensity (FLOP/byte, log scale)",
        "scale": {"type": "log"},
    }
    log_y = {
        "field": "gflops",
        "type": "quantitative",
        "title": "achieved GFLOP/s (log scale)",
        "scale": {"type": "log"},
    }
    layers: list[dict[str, Any]] = [
        {
            "data": {"values": points},
            "mark": {"type": "point", "filled": True, "size": 80},
            "encoding": {
                "x": log_x,
                "y": log_y,
                "color": {"field": "framework", "type": "nominal", "legend": LEGEND},
                "shape": {"field": "system", "type": "nominal"},
                # d3's ~r: significant digits, never an exponent (its g writes 1.175e+4)
                "tooltip": [
                    {"field": "operator"},
                    {"field": "framework"},
                    {"field": "run"},
                    {"field": "system"},
                    {"field": "intensity", "format": ",.3~r"},
                    {"field": "gflops", "format": ",.4~r"},
                ],
            },
        }
    ]
    if lines:
        layers.insert(
            0,
            {
                "data": {"values": lines},
                "mark": {"type": "line", "color": "#888", "strokeDash": [6, 3]},
                "encoding": {
                    "x": log_x,
                    "y": log_y,
                    "detail": {"field": "roof", "type": "nominal"},
                    "tooltip": [{"field": "roof"}, {"field": "gflops", "format": ",.4~r"}],
                },
            },
        )
    caption = roof_caption(found, missing, name_systems=name_systems)
    spec = {"$schema": SCHEMA, "title": title, "width": WIDTH, "height": HEIGHT, "layer": layers}
    return Chart("roofline", title, spec, caption=caption)
