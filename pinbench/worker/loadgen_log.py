"""LoadGen's detail log, read: the run's own account of whether its result is valid
(performance constraints, early stopping, minimum queries and duration)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

_EARLY_STOPPING = ("early_stopping_met", "early_stopping_result")


def read_detail_log(path: Path) -> dict[str, Any]:
    """The ``result_*`` and early-stopping entries of LoadGen's detail log (lines
    ``:::MLLOG {json}``)."""
    out: dict[str, Any] = {}
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith(":::MLLOG "):
            continue
        try:
            entry = json.loads(line[len(":::MLLOG ") :])
        except json.JSONDecodeError:
            continue
        key = entry.get("key", "")
        if key.startswith("result_") or key in (
            "effective_scenario",
            "effective_test_mode",
            *_EARLY_STOPPING,
        ):
            out[key] = _plain(entry.get("value"))
    return out


def _plain(value: Any) -> Any:
    """A value as plain JSON keeps it: LoadGen logs a division by zero as ``Infinity`` or
    ``NaN``, which no JSON column takes; kept as that text (a figure read from it is absent,
    with its reason: ``latency_metrics.unlogged``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def invalid_reasons(log: dict[str, Any]) -> list[str]:
    """Why LoadGen judged a run INVALID, from its detail log's entries (``read_detail_log``):
    each unmet condition named with the scenario setting that governs it, then LoadGen's own
    recommendation. Empty for a VALID run (or an accuracy run, which has no verdict)."""
    if log.get("result_validity") != "INVALID":
        return []
    reasons = []
    if log.get("result_min_duration_met") is False:
        reasons.append(
            "min_duration not met: the queries LoadGen planned were done before "
            "scenario.min_duration_ms had passed (lower min_duration_ms, or raise "
            "min_query_count / max_query_count)"
        )
    if log.get("result_min_queries_met") is False:
        reasons.append(
            "min_queries not met: fewer queries than scenario.min_query_count were issued "
            "(a max_query_count below it stops the run first)"
        )
    if log.get("result_perf_constraints_met") is False:
        reasons.append(
            "performance constraints not met: the latency at scenario.percentile exceeds "
            "scenario.target_latency_ms (lower target_qps)"
        )
    if log.get("early_stopping_met") is False:
        said = " ".join(
            " ".join(part.split())
            for part in str(log.get("early_stopping_result") or "").split(" * ")
            if part.strip(" *")
        ).strip(" *")
        reasons.append(
            "early stopping not met (too few queries to estimate the latency percentile with "
            "99% confidence; raise scenario.min_query_count)" + (f": {said}" if said else "")
        )
    own = " ".join(str(log.get("result_invalid_reason") or "").split())
    if own:
        reasons.append(f"LoadGen: {own}")
    return reasons or ["LoadGen's detail log names no reason"]
