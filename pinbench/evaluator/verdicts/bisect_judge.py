"""Judging one state of a bisect: its runs' evidence against the good and the bad ends."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pinbench.evaluator.records.run_blobs import latencies_of
from pinbench.evaluator.verdicts.bisect_chain import ACCURACY, Side, side_of
from pinbench.evaluator.verdicts.verdict import (
    BAND,
    MIN_EFFECT,
    LatencyComparison,
    accuracy_verdict,
    compare_latencies,
)
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace

# ---- judging a state ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evidence:
    """One row of the evidence table: a state, its lockfile, the runs measured for it."""

    step: str
    change: str
    lockfile: str
    runs: list[str]
    reused: int
    value: float | None
    side: str
    detail: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "change": self.change,
            "lockfile": self.lockfile,
            "runs": self.runs,
            "reused": self.reused,
            "value": self.value,
            "verdict": self.side,
            "detail": self.detail,
        }


@dataclass
class Endpoint:
    run: dict[str, Any]
    lock: Lockfile


@dataclass(frozen=True, slots=True)
class Judge:
    """Judges a state's runs against GOOD and BAD with ``rerun``'s statistics: latency
    distributions (``compare_latencies``, inconclusive allowed) for p50 and throughput, the
    exact value for an accuracy metric (as ``accuracy_verdict``: an accuracy run is
    deterministic)."""

    ws: Workspace
    metric: str
    key: str
    """The recorded metric the choice reads (``recorded_key``)."""
    good: dict[str, Any]
    bad: dict[str, Any]
    band: float = BAND
    task: str | None = None
    """GOOD's task, whose metric ``key`` is (accuracy)."""
    min_effect: float = MIN_EFFECT
    """The least relative change of a latency median counted as a change."""

    @property
    def accuracy(self) -> bool:
        return self.metric == ACCURACY

    @property
    def shown(self) -> str:
        """How messages name it: the choice, or for accuracy the task's metric (``top1``)."""
        return self.key if self.accuracy else self.metric

    def value(self, runs: Sequence[dict[str, Any]]) -> float | None:
        """The metric's median over ``runs`` (None: none recorded it)."""
        values = [float(r[self.key]) for r in runs if r.get(self.key) is not None]
        return statistics.median(values) if values else None

    def compare(self, original: dict[str, Any], runs: Sequence[dict[str, Any]]) -> tuple[str, str]:
        """(outcome, description) of ``runs`` against one endpoint run."""
        if self.accuracy:
            want, got = original.get(self.key), self.value(runs)
            line = accuracy_verdict(
                {self.key: want}, {} if got is None else {self.key: got}, self.task
            )
            return ("reproduced" if want == got else "changed", line or "no accuracy recorded")
        latency: LatencyComparison = compare_latencies(
            latencies_of(self.ws, original["latencies_sha256"]),
            [latencies_of(self.ws, r["latencies_sha256"]) for r in runs],
            band=self.band,
            min_effect=self.min_effect,
        )
        return latency.outcome, latency.describe()

    def side(self, runs: Sequence[dict[str, Any]]) -> tuple[Side, list[str]]:
        vs_good, why_good = self.compare(self.good, runs)
        vs_bad, why_bad = self.compare(self.bad, runs)
        return side_of(vs_good, vs_bad), [f"vs good: {why_good}", f"vs bad: {why_bad}"]
