"""The gate: a candidate run judged against its series' past runs under the series'
thresholds (``stats.compare``), with an exit code CI can act on (decision 252).

Every current threshold of the series is judged; the gate's outcome is ``regressed`` when one
metric regressed, else ``inconclusive`` when one is inconclusive, else ``passed``. Exit codes: 0
passed, 1 regressed, 2 inconclusive (the same numbers as a user error and a usage error: the
``--json`` object, printed only when the gate judged, tells them apart). A series with no
threshold, a candidate that is not in a series or did not record a thresholded metric is
refused (a user error): a gate that judged nothing never passes.

The history is the series' runs that started before the candidate with the candidate's
settings (``members.alike``: runner, framework name, threads, limits). A statistical threshold
on a location of the raw framework-call latencies (``stats.POOLED_METRICS``: their median or
mean) is judged on the raw latencies of the candidate and of each run in its window (read
once a gate call as NumPy arrays; a pooled side holds at most ``significance.MAX_POOLED`` of
them); any other metric, a tail percentile included, on the runs' figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.series.members import Member, alike, resolve, series_of_run
from pinbench.series.names import SeriesKey
from pinbench.series.stats import POOLED_METRICS, STATISTICAL, Comparison, Observation, compare
from pinbench.series.thresholds import Versioned, thresholds
from pinbench.workspace import Workspace

EXIT_CODES = {"passed": 0, "regressed": 1, "inconclusive": 2}


@dataclass(frozen=True, slots=True)
class Judged:
    threshold: Versioned
    comparison: Comparison

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "metric": c.metric,
            "verdict": c.verdict,
            "test": c.test,
            "baseline": c.baseline,
            "candidate": c.candidate,
            "change": c.change,
            "p_value": c.p_value,
            "alpha": c.alpha,
            "runs_used": c.runs_used,
            "reruns_needed": c.reruns_needed,
            "reason": c.reason,
            "threshold": self.threshold.to_json(),
        }


@dataclass(frozen=True, slots=True)
class GateResult:
    series: str
    run: str
    history: list[str]
    judged: list[Judged]

    @property
    def outcome(self) -> str:
        verdicts = {j.comparison.verdict for j in self.judged}
        for outcome in ("regressed", "inconclusive"):
            if outcome in verdicts:
                return outcome
        return "passed"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def to_json(self) -> dict[str, Any]:
        return {
            "series": self.series,
            "run": self.run,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "history": self.history,
            "comparisons": [j.to_json() for j in self.judged],
        }


def observation(
    member: Member, metric: str, raw: Callable[[str], npt.NDArray[np.float64]] | None
) -> Observation:
    """One run's figure, with its raw latencies when ``raw`` reads them for this metric."""
    latencies = None
    if raw is not None and metric in POOLED_METRICS and member.latencies_sha256:
        latencies = raw(member.latencies_sha256)
    return Observation(member.metrics[metric], latencies)


def judge(
    key: SeriesKey,
    members: list[Member],
    candidate: str,
    current: list[Versioned],
    raw: Callable[[str], npt.NDArray[np.float64]],
) -> GateResult:
    """Pure over what it is given: ``members`` (the series, oldest first, holding
    ``candidate``), the current thresholds, and ``raw`` (a latency blob's values by digest)."""
    if not current:
        raise UserError(
            f"series {key} has no thresholds: set one with `pinbench series threshold set "
            f"{key} METRIC --test ...`; a gate that judged nothing would pass anything"
        )
    index = next(i for i, m in enumerate(members) if m.run_id == candidate)
    cand = members[index]
    past = alike(members[:index], cand)
    judged = []
    for versioned in current:
        t = versioned.threshold
        if t.metric not in cand.metrics:
            raise UserError(
                f"run {candidate[:8]} recorded no {t.metric!r}, which series {key}'s threshold "
                f"v{versioned.version} judges"
            )
        having = [m for m in past if t.metric in m.metrics][-t.window :]
        reader = raw if t.test in STATISTICAL else None
        history = [observation(m, t.metric, reader) for m in having]
        judged.append(Judged(versioned, compare(t, history, observation(cand, t.metric, reader))))
    return GateResult(str(key), candidate, [m.run_id for m in past], judged)


def gate(
    ws: Workspace,
    run_id: str,
    *,
    series: str | None = None,
    alert: bool = True,
    alert_past: Callable[[str], bool] | None = None,
) -> GateResult:
    """Judge a recorded run against its series; a regression is recorded as an alert per
    regressed metric (``alert``) when the run is the newest of its series, or when
    ``alert_past(model)`` says the caller may alert on the model's past runs (a server: its
    namespace's publishers). Otherwise the gate answers without recording: gating old runs
    again would let anyone who may run fill a team's alerts."""
    from pinbench.evaluator.run import latencies_of
    from pinbench.series.alerts import raise_alert

    key, members = series_of_run(ws, run_id)
    if series is not None:
        named, _ = resolve(ws, series)
        if named != key:
            raise UserError(f"run {run_id[:8]} belongs to series {key}, not {named}")
    full = next(m.run_id for m in members if m.run_id.startswith(_full_id(ws, run_id)))

    loaded: dict[str, npt.NDArray[np.float64]] = {}

    def raw(digest: str) -> npt.NDArray[np.float64]:  # each blob read once a gate call
        if digest not in loaded:
            loaded[digest] = latencies_of(ws, digest).astype(np.float64)
        return loaded[digest]

    result = judge(key, members, full, thresholds(ws, key), raw)
    newest = members[-1].run_id == full
    if alert and (newest or (alert_past is not None and alert_past(key.model))):
        for j in result.judged:
            if j.comparison.verdict == "regressed":
                raise_alert(
                    ws,
                    series=result.series,
                    metric=j.comparison.metric,
                    kind="regression",
                    run_id=full,
                    detail=j.to_json(),
                )
    return result


def _full_id(ws: Workspace, run_id: str) -> str:
    from pinbench.evaluator.history import find_run

    with ws.transaction() as session:
        return find_run(session, run_id).id
