"""The series page's table of runs and its plots' units: each run's settings where the series'
runs differ in them (``min_duration_ms`` always), whether LoadGen called it INVALID, and
whether a gate of the next run with the latest run's settings compares with it, as
``series.gate.judge`` chooses its window: the runs with those settings (``members.alike``),
less those a gate found regressed, less those LoadGen called INVALID (unless the gate is
asked to include them)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from pinbench.metric_names import NS_UNITS, VERDICT, ns_unit, words
from pinbench.run_figures import contended
from pinbench.series.members import Member, invalid, left_out_because, settings_of

ALWAYS = ("min_duration_ms",)
"""Settings shown even where every run has the same: how long LoadGen ran."""


@dataclass(frozen=True, slots=True)
class SeriesRow:
    run: str
    started_at: str
    model: str
    framework: str
    settings: list[str]
    """The values of ``SeriesRuns.settings``, in order."""
    invalid: bool
    busy: bool
    """Timed while other work took the machine (``contended_bool``)."""
    baseline: str
    """``yes``, or ``no:`` and why."""
    moved: list[str]


@dataclass(frozen=True, slots=True)
class SeriesRuns:
    settings: list[str]
    rows: list[SeriesRow]
    compared_on: list[str]
    """The settings a gate compares runs on (``members.settings_of``'s fields)."""


def settings(member: Member) -> dict[str, str]:
    """A run's settings as text: its runner, framework name, threads, limits and its scenario's
    LoadGen settings (the series holds its scenario and mode)."""
    import msgspec

    from pinbench.evaluator.verdicts.bisect_chain import show_value

    body = member.lock.body
    env = body.environment
    scenario = msgspec.to_builtins(body.scenario)
    out = {k: show_value(v) for k, v in scenario.items() if k not in ("name", "mode")}
    out["runner"] = member.runner
    out["framework"] = env.framework if env is not None else "unset"
    out["threads"] = show_value(body.threads)
    out["limits"] = show_value(msgspec.to_builtins(body.request.limits))
    return out


def series_runs(
    members: Sequence[Member], points: Sequence[dict[str, Any]], rejected: Collection[str]
) -> SeriesRuns:
    """``members`` (oldest first) with ``detail``'s ``points`` for them and the runs a gate
    found regressed (``alerts.regressed_runs``)."""
    shown = [settings(m) for m in members]
    names = list(shown[0]) if shown else []
    columns = [*ALWAYS, *(n for n in names if n not in ALWAYS and len({s[n] for s in shown}) > 1)]
    latest = members[-1]
    compared_on = settings_of(latest)
    rows = []
    for member, point, values in zip(members, points, shown, strict=True):
        why = left_out_because(member, compared_on, rejected)
        baseline = f"no: {why}" if why else "yes"
        rows.append(
            SeriesRow(
                member.run_id,
                point["started_at"][:19].replace("T", " "),
                point["model"],
                point["framework"] or "",
                [values[c] for c in columns],
                invalid(member),
                contended(member.metrics),
                baseline,
                point["moved"],
            )
        )
    return SeriesRuns(columns, rows, list(json.loads(settings_of(latest))))


def plot_unit(metric: str, values: Sequence[float], recorded: str) -> tuple[str, float]:
    """The unit a metric's plot is drawn in and what its values are divided by for it:
    nanoseconds in the unit a column of them takes (``ns_unit``), a verdict as what 1 and 0
    mean, a plain ratio none, else as recorded."""
    if metric.endswith("_ns") and values:
        unit = ns_unit(values)
        return unit, NS_UNITS[unit][0]
    if metric == VERDICT:
        return "1 = VALID, 0 = INVALID", 1.0
    if recorded == "bool":
        return "1 = yes, 0 = no", 1.0
    return ("" if recorded == "ratio" else recorded), 1.0


def named_alerts(alerts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Alerts with their metric's name in words beside its key (``metric_words``)."""
    return [{**a, "metric_words": words(str(a["metric"]))} for a in alerts]


def named_metrics(series: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``series list``'s rows with each metric's name in words beside its key (``named``)."""
    return [{**row, "named": [(words(m), m) for m in row["metrics"]]} for row in series]
