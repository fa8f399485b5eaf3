"""One timeline: model spans, framework events and system samples as Chrome trace-event JSON
(opens in Perfetto and chrome://tracing), with pinbench's metadata under a top-level
``pinbench`` key that viewers ignore.

Every timed ``predict`` is a span, and the operator table covers all of them; the file itself
shows the cold start and the first ``TIMELINE_PREDICTS`` warm predictions with their framework
events, so its size does not grow with the run's length (the metadata says how many were
left out). Framework events during warm-up are left out of both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.trace.align import align
from pinbench.trace.events import FrameworkTrace
from pinbench.trace.ops import OpRow, op_table
from pinbench.trace.system import Samples

FORMAT = "pinbench-trace/1"
TIMELINE_PREDICTS = 500
PID = 1
MODEL_TID = 1
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Span:
    name: str
    start_ns: int
    end_ns: int
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Recording:
    """What a traced evaluation gathered, on ``perf_counter_ns``."""

    level: str
    framework: str
    framework_version: str
    wall_offset_ns: int
    """``time_ns() - perf_counter_ns()``: puts the trace on the wall clock (OpenTelemetry)."""
    phases: list[Span] = field(default_factory=list)
    load: Span | None = None
    cold: Span | None = None
    warm_starts: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    warm_durations: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    starts: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    durations: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    """Every timed ``predict`` of the scenario (start, latency)."""
    framework_trace: FrameworkTrace | None = None
    samples: Samples | None = None


def _us(t: int, origin: int) -> float:
    return round((t - origin) / 1000, 3)


def _x(
    name: str, cat: str, start: int, end: int, origin: int, tid: int, **args: Any
) -> dict[str, Any]:
    event = {
        "ph": "X",
        "name": name,
        "cat": cat,
        "pid": PID,
        "tid": tid,
        "ts": _us(start, origin),
        "dur": round((end - start) / 1000, 3),
    }
    if args:
        event["args"] = args
    return event


def _meta(name: str, tid: int | None, value: str) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "M", "name": name, "pid": PID, "args": {"name": value}}
    if tid is not None:
        event["tid"] = tid
    return event


def build(rec: Recording) -> dict[str, Any]:
    """The Chrome trace of a recording, with its operator table in the metadata."""
    samples = rec.samples.times_ns[:1] if rec.samples is not None else []
    origin = min([p.start_ns for p in rec.phases] + samples or [0])
    shown = min(TIMELINE_PREDICTS, int(rec.starts.size))
    events: list[dict[str, Any]] = [
        _meta("process_name", None, f"pinbench evaluator: {rec.framework} {rec.framework_version}"),
        _meta("thread_name", MODEL_TID, "model"),
    ]
    for p in rec.phases:
        events.append(_x(p.name, "pipeline", p.start_ns, p.end_ns, origin, MODEL_TID, **p.args))
    for i in range(shown):
        s = int(rec.starts[i])
        events.append(
            _x("predict", "predict", s, s + int(rec.durations[i]), origin, MODEL_TID, query=i)
        )
    meta: dict[str, Any] = {
        "format": FORMAT,
        "level": rec.level,
        "framework": rec.framework,
        "framework_version": rec.framework_version,
        "clock": {
            "source": "perf_counter_ns",
            "origin_ns": origin,
            "origin_unix_ns": origin + rec.wall_offset_ns,
        },
        "traced_latency": True,
        "predictions": int(rec.starts.size),
        "model_time_ns": int(rec.durations.sum()),
        "timeline": {
            "predictions_shown": shown,
            "predictions_left_out": int(rec.starts.size) - shown,
            "warm_up_predictions": int(rec.warm_starts.size),
        },
        "cold_start": _cold_start(rec),
    }
    if rec.framework_trace is not None:
        meta["framework_trace"], meta["ops"], meta["cold_ops"] = _framework(
            rec, rec.framework_trace, origin, shown, events
        )
    if rec.samples is not None:
        _counters(rec.samples, origin, events)
        meta["system"] = rec.samples.metadata()
    return {"traceEvents": events, "displayTimeUnit": "ns", "pinbench": meta}


def _cold_start(rec: Recording) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if rec.load is not None:
        out["load_ns"] = rec.load.end_ns - rec.load.start_ns
    if rec.cold is not None:
        out["first_predict_ns"] = rec.cold.end_ns - rec.cold.start_ns
    if rec.durations.size:
        out["warm_p50_ns"] = float(np.median(rec.durations))
    return out


def _framework(
    rec: Recording, fw: FrameworkTrace, origin: int, shown: int, events: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Align the profiler's events, add those in view to ``events``; return the alignment's
    facts, the operator table of the scenario's predictions, and the cold predict's."""
    # The spans the framework runs in, in time order: load, cold predict, warm-up, scenario.
    fixed = [s for s in (rec.load, rec.cold) if s is not None]
    starts = np.concatenate(
        [np.array([s.start_ns for s in fixed], np.int64), rec.warm_starts, rec.starts]
    )
    ends = np.concatenate(
        [
            np.array([s.end_ns for s in fixed], np.int64),
            rec.warm_starts + rec.warm_durations,
            rec.starts + rec.durations,
        ]
    )
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    kind = np.concatenate(
        [
            np.arange(len(fixed)),
            np.full(rec.warm_starts.size, -1),
            np.arange(rec.starts.size) + 1_000_000,
        ]
    )[order]
    ev_start = np.array([e.start_ns for e in fw.events], np.int64)
    ev_end = np.array([e.end_ns for e in fw.events], np.int64)
    a = align(
        starts,
        ends,
        ev_start,
        ev_end,
        offset_ns=fw.offset_ns,
        resolution_ns=fw.resolution_ns,
        bounds=fw.offset_bounds_ns,
    )
    where = np.where(a.span >= 0, kind[np.maximum(a.span, 0)], -2)
    # where: 0 load, 1 cold predict (when both present), -1 warm-up, >= 1e6 scenario query,
    # -2 outside every span.
    cold_kind = len(fixed) - 1 if rec.cold is not None else -3
    window_end = int(rec.starts[shown - 1] + rec.durations[shown - 1]) if shown else origin
    warm_lo = int(rec.warm_starts[0]) if rec.warm_starts.size else 0
    warm_hi = int(rec.warm_starts[-1] + rec.warm_durations[-1]) if rec.warm_starts.size else 0
    threads: dict[str, int] = {}
    per_query: dict[int, list[tuple[int, str, str, int]]] = {}
    cold_ops: list[tuple[int, str, str, int]] = []
    for i, e in enumerate(fw.events):
        w = int(where[i])
        s, t = int(a.start_ns[i]), int(a.end_ns[i])
        if e.is_op and w >= 1_000_000:
            per_query.setdefault(w, []).append((s, e.name, e.op, t - s))
        elif e.is_op and w == cold_kind:
            cold_ops.append((s, e.name, e.op, t - s))
        in_view = (
            (0 <= w < 1_000_000)
            or (1_000_000 <= w < 1_000_000 + shown)
            or (w == -2 and origin <= s <= window_end and not warm_lo <= s <= warm_hi)
        )
        if not in_view:
            continue
        tid = threads.setdefault(e.thread, MODEL_TID + 1 + len(threads))
        args = dict(e.args or {})
        if e.op:
            args["op"] = e.op
        events.append(_x(e.name, "operator" if e.is_op else "framework", s, t, origin, tid, **args))
    for thread, tid in threads.items():
        events.append(_meta("thread_name", tid, f"{rec.framework} thread {thread}"))
    facts: dict[str, Any] = {
        "source": fw.source,
        "events": len(fw.events),
        "in_spans": a.contained,
        "clock_shift_ns": a.shift_ns,
        "resolution_ns": fw.resolution_ns,
        "notes": fw.notes,
    }
    if fw.offset_bounds_ns is not None:
        low, high = fw.offset_bounds_ns
        facts["clock_uncertainty_ns"] = high - low  # the bracketed reading's width
    ops = op_table(per_query.values())
    return facts, [r.to_json() for r in ops], [r.to_json() for r in op_table([cold_ops])]


def _counters(samples: Samples, origin: int, events: list[dict[str, Any]]) -> None:
    for t, row in zip(samples.times_ns, samples.rows, strict=True):
        groups: dict[str, dict[str, float]] = {}
        for key, value in row.items():
            group, name = key.split(".", 1)
            groups.setdefault(group, {})[name] = round(value, 3)
        for group, args in groups.items():
            events.append(
                {"ph": "C", "name": group, "pid": PID, "ts": _us(t, origin), "args": args}
            )


def ops_of(trace: dict[str, Any], key: str = "ops") -> list[OpRow]:
    return [OpRow.from_json(r) for r in trace.get("pinbench", {}).get(key, [])]
