"""The web UI's tables of runs (the runs page, the home page, a system's page): each figure
column named in words with its key beside (``metric_names``) and shown in one unit for the
whole column, at the precision ``runs list`` prints it; a run LoadGen called INVALID marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pinbench.metric_names import fmt_rate, in_unit, ns_unit, words
from pinbench.run_figures import contended, loadgen_invalid, run_marks
from pinbench.run_metrics import metrics_of

P50 = "latency_p50_ns"
THROUGHPUT = "throughput_sps"


@dataclass(frozen=True, slots=True)
class Heading:
    """A figure column's heading: its name in words, its key and its unit."""

    words: str
    key: str
    unit: str


@dataclass(frozen=True, slots=True)
class RunLine:
    run: Mapping[str, Any]
    """The run as ``history`` gives it (metrics under ``metrics``)."""
    p50: str
    throughput: str
    invalid: bool
    """LoadGen called it INVALID (``loadgen_valid_bool`` 0): its figures are marked."""
    busy: bool = False
    """It was timed while other work took the machine (``contended_bool``)."""
    marks: tuple[str, ...] = ()
    """``UNSANDBOXED``, ``+code`` (``run_figures.run_marks``)."""


@dataclass(frozen=True, slots=True)
class RunsTable:
    p50: Heading
    throughput: Heading
    lines: list[RunLine]


def runs_table(runs: Sequence[Mapping[str, Any]]) -> RunsTable:
    """The runs' rows: LoadGen's p50 in the unit its column's values choose (``ns_unit``),
    LoadGen's throughput in samples/s. A figure that is another's in a run of another kind
    (an operator's calls, a training run's epochs) names whose it is, and a traced run's p50
    says so, as ``runs list`` does."""
    metrics = [metrics_of(r) for r in runs]
    unit = ns_unit(m[P50] for m in metrics if P50 in m)
    lines = []
    for run, m in zip(runs, metrics, strict=True):
        p50 = _whose(in_unit(m[P50], unit), P50, run) if P50 in m else ""
        if p50 and run.get("trace", "none") != "none":
            p50 += f" (traced: {run['trace']})"
        throughput = _whose(fmt_rate(m[THROUGHPUT]), THROUGHPUT, run) if THROUGHPUT in m else ""
        marks = tuple(run_marks(m))
        lines.append(RunLine(run, p50, throughput, loadgen_invalid(m), contended(m), marks))
    return RunsTable(
        Heading(words(P50), P50, unit),
        Heading(words(THROUGHPUT), THROUGHPUT, "samples/s"),
        lines,
    )


def _whose(cell: str, key: str, run: Mapping[str, Any]) -> str:
    """``cell``, with whose figure it is where the run's kind makes ``key`` another's."""
    kind = run.get("kind")
    own = words(key, kind=kind)
    return cell if own == words(key) else f"{cell} ({own})"
