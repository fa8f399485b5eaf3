"""A run's latency metrics, as MLPerf defines them and as pinbench measures them.

Two series, two names (decision 159):

- ``latency_*_ns`` are **LoadGen's own**, read from its summary of the run: the time from
  LoadGen issuing a query to the system under test completing it, for each sample
  (SingleStream, Server, Offline) or, in MultiStream, for each query (all its samples) — what
  MLPerf Inference reports. Generation runs add LoadGen's ``ttft_*_ns`` (first token) and
  ``tpot_*_ns`` (time per output token).
- ``framework_latency_*_ns`` (and ``framework_ttft_*_ns``, ``framework_tpot_*_ns``) are
  pinbench's: the framework call alone (``perf_counter_ns`` around ``predict``), one value per
  call, the series the run's raw-latency blob keeps and the rerun verdict compares.

Both use LoadGen's percentile rule (``results.cc``, ``ProcessLatencies``): sort the values and
take the one at index ``floor(count * fraction)``, no interpolation, with the fractions written
as LoadGen writes them (0.999, not 99.9 / 100).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 0.50),
    ("p90", 0.90),
    ("p95", 0.95),
    ("p97", 0.97),
    ("p99", 0.99),
    ("p99_9", 0.999),
)
"""LoadGen's reported percentiles (``latency_percentiles`` in ``results.h``): tag, fraction."""

_LOG_TAG = {tag: f"{fraction * 100:.2f}" for tag, fraction in PERCENTILES}
"""Each tag as LoadGen's detail log spells its percentile (``DoubleToString(p * 100)``)."""


def series(values: npt.NDArray[Any], prefix: str) -> dict[str, float]:
    """``{prefix}_pXX_ns`` at LoadGen's percentiles, ``{prefix}_mean_ns`` (the arithmetic
    mean), ``_min_ns`` and ``_max_ns`` of nanosecond values; nothing for no values (an empty
    series has no percentile)."""
    if values.size == 0:
        return {}
    ordered = np.sort(values, kind="stable")
    n = int(ordered.size)
    out = {f"{prefix}_{tag}_ns": float(ordered[int(n * fraction)]) for tag, fraction in PERCENTILES}
    out[f"{prefix}_mean_ns"] = float(np.mean(ordered, dtype=np.float64))
    out[f"{prefix}_min_ns"] = float(ordered[0])
    out[f"{prefix}_max_ns"] = float(ordered[-1])
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def loadgen_latencies(
    summary: Mapping[str, Any], scenario: str, target: float | None = None
) -> dict[str, float]:
    """The headline ``latency_*_ns`` (and, with token latencies, ``ttft_*_ns`` and
    ``tpot_*_ns``) from LoadGen's detail-log entries (``loadgen_log.read_detail_log``): per
    query in MultiStream, per sample otherwise. A value LoadGen did not log (an accuracy run,
    an Offline TTFT) is absent, never zero. ``target``: the scenario's percentile as a
    fraction, whose latency LoadGen prints in its summary (``target_percentile_latency_ns``)
    when it is not one of the fixed ones."""
    per_query = scenario == "MultiStream"
    keys: dict[str, str] = {}
    for tag, _ in PERCENTILES:
        spelled = _LOG_TAG[tag]
        keys[f"latency_{tag}_ns"] = (
            f"result_{spelled}_percentile_per_query_latency_ns"
            if per_query
            else f"result_{spelled}_percentile_latency_ns"
        )
        keys[f"ttft_{tag}_ns"] = f"result_first_token_{spelled}_percentile_latency_ns"
        keys[f"tpot_{tag}_ns"] = f"result_time_per_output_token_{spelled}_percentile_ns"
    for stat in ("mean", "min", "max"):
        keys[f"latency_{stat}_ns"] = (
            f"result_{stat}_query_latency_ns" if per_query else f"result_{stat}_latency_ns"
        )
        keys[f"ttft_{stat}_ns"] = f"result_first_token_{stat}_latency_ns"
        keys[f"tpot_{stat}_ns"] = f"result_time_to_output_token_{stat}"
    out: dict[str, float] = {}
    for name, key in keys.items():
        value = _number(summary.get(key))
        if value is not None:
            out[name] = value
    at_target = _number(summary.get("target_percentile_latency_ns"))
    if at_target is not None and target is not None and 0 < target < 1:
        out.setdefault(f"latency_{tag_of(target)}_ns", at_target)
    return out


THROUGHPUT_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "SingleStream": (
        ("throughput_sps", "result_qps_with_loadgen_overhead"),
        ("throughput_tps", "result_token_throughput_with_loadgen_overhead"),
    ),
    "Server": (
        ("throughput_sps", "result_completed_samples_per_sec"),
        ("throughput_tps", "result_completed_tokens_per_second"),
    ),
    "Offline": (
        ("throughput_sps", "result_samples_per_second"),
        ("throughput_tps", "result_tokens_per_second"),
    ),
    "MultiStream": (),
}
"""Per scenario, LoadGen's own throughput (its summary's headline in Offline, "Completed
samples per second" in Server, "QPS w/ loadgen overhead" in SingleStream, where a query is one
sample; MultiStream reports none) and, with token latencies, its tokens per second ("Tokens
per second", "Completed tokens per second", "TPS w/ loadgen overhead"): the metric each is
recorded as and the detail-log entry it is read from (decision 275)."""


def loadgen_counts(summary: Mapping[str, Any], scenario: str) -> dict[str, float]:
    """LoadGen's ``throughput_sps`` and ``throughput_tps`` for ``scenario`` (``THROUGHPUT_KEYS``)
    and its ``queries_count`` (``result_query_count``: the queries it issued, one in Offline),
    from its detail-log entries, a throughput as its summary prints it where that was read
    (``PRINTED``); a figure LoadGen did not log, or logged as no number of it, is absent, never
    zero (``unlogged`` says why)."""
    out: dict[str, float] = {}
    printed = summary.get(PRINTED)
    printed = printed if isinstance(printed, Mapping) else {}
    undefined = unlogged(summary, scenario, tokens=True)
    for name, key in (*THROUGHPUT_KEYS.get(scenario, ()), ("queries_count", "result_query_count")):
        logged, shown = _number(summary.get(key)), _number(printed.get(key))
        if logged is None or name in undefined:
            continue  # what the summary printed counts only beside what the log holds
        out[name] = shown if shown is not None and _same(shown, logged) else logged
    return out


def unlogged(summary: Mapping[str, Any], scenario: str, *, tokens: bool) -> dict[str, str]:
    """Each LoadGen throughput a performance run of ``scenario`` defines (``THROUGHPUT_KEYS``;
    tokens per second only for a run of ``tokens``) that ``loadgen_counts`` could not take
    from its detail-log entries, with the reason: never a 0.0 where LoadGen had no number."""
    out: dict[str, str] = {}
    for name, key in THROUGHPUT_KEYS.get(scenario, ()):
        if name == "throughput_tps" and not tokens:
            continue
        value = summary.get(key)
        if key not in summary:
            out[name] = f"LoadGen's detail log holds no {key}"
        elif _number(value) is None:
            out[name] = f"LoadGen logged {key} as {value!r}, not a number of {name}"
        elif key == "result_qps_with_loadgen_overhead" and summary.get("result_query_count") == 1:
            out[name] = (
                f"one query: LoadGen's {key} counts the intervals between queries' issue "
                "((queries - 1) / the last one's issue time), 0 for a single query"
            )
    return out


def _same(printed: float, logged: float) -> bool:
    """The summary's figure is the detail log's, printed with other rounding: within half a
    unit (the log rounds SingleStream's QPS to a whole number) or a millionth of it."""
    return abs(printed - logged) <= max(0.5, 1e-6 * abs(logged))


def loadgen_figures(
    summary: Mapping[str, Any], scenario: str, target: float | None = None
) -> dict[str, float]:
    """Every figure a run records from LoadGen's detail-log entries: its latencies
    (``loadgen_latencies``), throughput and query count (``loadgen_counts``) and its verdict
    (``loadgen_valid_bool``: 1 VALID, 0 INVALID; absent where LoadGen gave none)."""
    out = loadgen_latencies(summary, scenario, target)
    out.update(loadgen_counts(summary, scenario))
    valid = summary.get("result_validity")
    if valid is not None:
        out["loadgen_valid_bool"] = 1.0 if valid == "VALID" else 0.0
    return out


def tag_of(fraction: float) -> str:
    """``0.9`` → ``p90``, ``0.999`` → ``p99_9``, ``0.875`` → ``p87_5``."""
    return f"p{round(fraction * 100, 6):g}".replace(".", "_")


PRINTED = "summary_printed"
"""The key, among the detail-log entries a run keeps, of the throughputs as LoadGen's summary
prints them (``printed_throughputs``): its detail log rounds some (SingleStream's QPS to a
whole number: 111636 where the summary says 111635.82). A printed figure is taken only where
it is the logged one differently rounded (``loadgen_counts``): the summary is a file code
beside the model could have rewritten."""

_PRINTED_LINES = {
    "Samples per second": "result_samples_per_second",
    "Completed samples per second": "result_completed_samples_per_sec",
    "QPS w/ loadgen overhead": "result_qps_with_loadgen_overhead",
    "Tokens per second": "result_tokens_per_second",
    "Completed tokens per second": "result_completed_tokens_per_second",
    "TPS w/ loadgen overhead": "result_token_throughput_with_loadgen_overhead",
}
_PRINTED = re.compile(r"^([A-Za-z/ ]+?) *: *([0-9]+(?:\.[0-9]+)?)$")


def printed_throughputs(summary_text: str) -> dict[str, float]:
    """The throughputs of ``mlperf_log_summary.txt`` (``Samples per second: 11934.5``), each
    under the detail-log entry it prints (``result_samples_per_second``); the first line of
    each wins (Server prints "Completed tokens per second" twice)."""
    out: dict[str, float] = {}
    for line in summary_text.splitlines():
        found = _PRINTED.match(line.strip())
        if found and found.group(1) in _PRINTED_LINES:
            out.setdefault(_PRINTED_LINES[found.group(1)], float(found.group(2)))
    return out


_TARGET_LINE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)th percentile latency \(ns\) : ([0-9]+)\s*$")


def target_percentile_latency(summary_text: str) -> int | None:
    """The latency on LoadGen's headline line of ``mlperf_log_summary.txt`` (``90.0th
    percentile latency (ns) : 9207``; SingleStream and MultiStream print one): the scenario's
    target percentile. The detail log keeps only the fixed percentiles, so a target outside
    them (``scenario.percentile: 80``) is read here."""
    for line in summary_text.splitlines():
        found = _TARGET_LINE.match(line.strip())
        if found:
            return int(found.group(2))
    return None
