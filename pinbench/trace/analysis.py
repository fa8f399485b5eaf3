"""What ``pinbench runs trace`` shows: a run's cold start, its phases, its operator table
(slowest first, with each row's share of model time), and for several runs the operator
categories side by side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.trace.ops import CategoryRow, OpRow, by_category
from pinbench.trace.timeline import ops_of


@dataclass(frozen=True, slots=True)
class TraceView:
    run: dict[str, Any]
    """``show_run``'s view of the run."""
    trace: dict[str, Any]

    @property
    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = self.trace.get("pinbench", {})
        return meta

    @property
    def ops(self) -> list[OpRow]:
        return ops_of(self.trace)

    @property
    def cold_ops(self) -> list[OpRow]:
        return ops_of(self.trace, "cold_ops")

    @property
    def model_ns(self) -> int:
        return int(self.meta.get("model_time_ns", 0))

    @property
    def predictions(self) -> int:
        return int(self.meta.get("predictions", 0))

    def phases(self) -> list[tuple[str, int]]:
        """The pipeline's phases in order, with their durations (ns)."""
        return [
            (e["name"], round(e["dur"] * 1000))
            for e in self.trace.get("traceEvents", [])
            if e.get("cat") == "pipeline"
        ]

    def share(self, row: OpRow) -> float:
        return row.total_ns / self.model_ns if self.model_ns else 0.0

    def covered(self) -> float:
        """The share of model time inside top-level operators."""
        return sum(r.total_ns for r in self.ops) / self.model_ns if self.model_ns else 0.0

    def to_json(self, top: int) -> dict[str, Any]:
        meta = self.meta
        out: dict[str, Any] = {
            "run": self.run["id"],
            "model": self.run["model"],
            "framework": self.run["framework"],
            "level": meta.get("level"),
            "predictions": self.predictions,
            "model_time_ns": self.model_ns,
            "cold_start": meta.get("cold_start", {}),
            "phases": [{"name": n, "duration_ns": d} for n, d in self.phases()],
        }
        if "framework_trace" in meta:
            out["framework_trace"] = meta["framework_trace"]
            out["operators"] = [
                {
                    **r.to_json(),
                    "category": r.category,
                    "mean_ns": r.mean_ns,
                    "share": self.share(r),
                }
                for r in self.ops[:top]
            ]
            out["operators_total"] = len(self.ops)
            out["operators_cover"] = self.covered()
            out["cold_operators"] = [r.to_json() for r in self.cold_ops[:top]]
        if "system" in meta:
            out["system"] = meta["system"]
        return out


def compare(views: list[TraceView]) -> list[CategoryRow]:
    """The runs' operator time per prediction by category (needs operator tables)."""
    return by_category(
        [v.ops for v in views], [v.predictions for v in views], [v.model_ns for v in views]
    )
