"""How people read a run's metrics, one way for every face that shows them (issue 64, items 9
and 10): each key's name in words saying whose figure it is, with the key kept beside it
(``p50 latency, LoadGen`` for ``latency_p50_ns``, ``p50 latency, framework call`` for
``framework_latency_p50_ns``); nanoseconds in the unit a whole column shares, at the
precision ``runs show`` prints them (``fmt_ns``: µs to 0.1, ms to 0.01).

The words follow decision 275: ``throughput_sps`` and ``queries_count`` are LoadGen's figures
in an inference run, ``framework_throughput_sps`` and ``framework_calls_count`` pinbench's;
an operator run's ``latency_*`` and ``queries_count`` are the operator's calls, a training
run's ``throughput_sps`` its epochs' samples per second. A task's metrics take their task's
label (``pinbench.tasks.metrics``, read without importing a task); a key named nowhere is
its own name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pinbench.shown import fmt_sig as fmt_sig  # its home; the printouts import it from here

VERDICT = "loadgen_valid_bool"
"""LoadGen's verdict on a performance run: 1.0 VALID, 0.0 INVALID; absent for an accuracy run
and a run not under LoadGen."""

WORDS = {
    VERDICT: "LoadGen verdict",
    "throughput_sps": "throughput, LoadGen",
    "throughput_tps": "tokens/s, LoadGen",
    "queries_count": "queries, LoadGen",
    "framework_throughput_sps": "throughput, framework calls",
    "framework_throughput_tps": "tokens/s, framework calls",
    "framework_calls_count": "framework calls",
    "samples_count": "samples answered",
    "tokens_count": "tokens generated",
    "tokens_per_sample_mean_count": "mean tokens per sample",
    "peak_rss_bytes": "peak RSS",
    "model_added_rss_bytes": "model memory (RSS added by loading and running it)",
    "machine_others_cpu_ratio": "other processes' share of the machine's CPU while timed",
    "machine_steal_ratio": "hypervisor steal while timed",
    "contended_bool": "timed on a busy machine",
    "peak_gpu_bytes": "peak GPU memory",
    "energy_j": "energy",
    "energy_per_inference_j": "energy per inference",
    "time_to_accuracy_s": "time to accuracy",
    "eval_time_s": "eval time (excluded)",
    "valid_bool": "operator result valid",
    "achieved_flop_per_s": "achieved FLOP/s",
    "achieved_byte_per_s": "achieved bytes/s",
    "max_rel_error": "max relative error",
}
"""Keys with fixed words, as an inference run records them."""

BY_KIND = {
    "operator": {"queries_count": "operator calls"},
    "training": {"throughput_sps": "throughput, training"},
}
"""Where a run of another kind records a key with another meaning."""

_TIMED = re.compile(
    r"^(?P<whose>framework_|postprocess_)?(?P<what>latency|ttft|tpot)_"
    r"(?P<stat>p[0-9]+(?:_[0-9]+)?|mean|min|max)_ns\Z"
)
_WHAT = {"latency": "latency", "ttft": "time to first token", "tpot": "time per output token"}
_WHOSE = {"framework_": "framework call", "postprocess_": "post-processing call"}
_OWN = {"operator": "operator call"}
"""Whose an unprefixed latency is in a run of this kind (LoadGen's in an inference run)."""


def words(key: str, *, task: str | None = None, kind: str | None = None) -> str:
    """``key``'s name in words (``latency_p99_9_ns`` → ``p99.9 latency, LoadGen``); the key
    itself where nothing names it."""
    own = BY_KIND.get(kind or "", {})
    if key in own:
        return own[key]
    timed = _TIMED.match(key)
    if timed:
        stat = timed["stat"].replace("_", ".")
        prefix = timed["whose"]
        whose = _WHOSE[prefix] if prefix else _OWN.get(kind or "", "LoadGen")
        return f"{stat} {_WHAT[timed['what']]}, {whose}"
    if key in WORDS:
        return WORDS[key]
    from pinbench.tasks.metrics import metric_of

    declared = metric_of(key, task)
    if declared is None:
        return key
    output = key.removeprefix(declared.name).removeprefix("_")
    return f"{declared.label}, {output}" if output else declared.label


def named(key: str, *, task: str | None = None, kind: str | None = None) -> str:
    """Words with the key beside (``p50 latency, LoadGen (latency_p50_ns)``); the bare key
    where nothing names it."""
    said = words(key, task=task, kind=kind)
    return key if said == key else f"{said} ({key})"


NS_UNITS = {"µs": (1e3, 1), "ms": (1e6, 2)}
"""A duration's units: nanoseconds in one, and the decimals ``runs show`` prints it with."""


def ns_unit(values: Iterable[float]) -> str:
    """The unit a column of nanoseconds is shown in: µs when its smallest value is under a
    millisecond (as ``fmt_ns`` prints that one), else ms; every value of the column in it."""
    return "µs" if min(values, default=0.0) < 1e6 else "ms"


def in_unit(value_ns: float, unit: str) -> str:
    """Nanoseconds as a number of ``unit`` (``NS_UNITS``) at its precision, the unit left to
    the column's heading: ``in_unit(34_800, "µs")`` is ``34.8``."""
    divisor, decimals = NS_UNITS[unit]
    return f"{value_ns / divisor:,.{decimals}f}"


def fmt_ns(value: float) -> str:
    """Nanoseconds for people: microseconds below a millisecond, else milliseconds, at the
    precision every face shows them (``in_unit``)."""
    unit = ns_unit([value])
    return f"{in_unit(value, unit)} {unit}"


def fmt_rate(value: float) -> str:
    """A throughput or a count for people: whole from 100 up (``11,934``), else three
    significant digits (``0.4``, ``12.3``): a slow model's 0.4 samples/s is never ``0``."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
