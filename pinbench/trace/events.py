"""What a framework profiler hands back: events on the framework's own clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class FrameworkEvent:
    name: str
    """The framework's name for it (``/conv1/Conv``, ``aten::conv2d``, ``dense/MatMul``)."""
    op: str
    """The operator type (``Conv``, ``aten::conv2d``, ``_MklNativeFusedConv2D``), or ``""``
    for the framework's own runtime spans (session run, executor)."""
    start_ns: int
    end_ns: int
    thread: str
    is_op: bool
    """Counts in the operator table: a top-level operator (not nested in another)."""
    args: dict[str, Any] | None = None


@dataclass(slots=True)
class FrameworkTrace:
    source: str
    """The profiler, for people (``torch.profiler 2.13.0+cpu``)."""
    events: list[FrameworkEvent]
    offset_ns: int
    """First estimate of (framework clock - ``perf_counter_ns``); refined by alignment."""
    offset_bounds_ns: tuple[int, int] | None = None
    """Where the offset certainly lies, ``(low, high)``, when the profiler stamped events
    between two ``perf_counter_ns`` readings (an anchor): alignment refines within it."""
    resolution_ns: int = 1
    """The profiler's timestamp resolution (ONNX Runtime reports whole microseconds)."""
    notes: list[str] = field(default_factory=list)


def mark_top_level(events: list[FrameworkEvent]) -> None:
    """Keep ``is_op`` only on operators not nested in another operator of the same thread."""
    by_thread: dict[str, list[FrameworkEvent]] = {}
    for e in events:
        if e.is_op:
            by_thread.setdefault(e.thread, []).append(e)
    for ops in by_thread.values():
        ops.sort(key=lambda e: (e.start_ns, -e.end_ns))
        open_until = -1
        for e in ops:
            if e.end_ns <= open_until:
                e.is_op = False  # inside the operator still open on this thread
            else:
                open_until = e.end_ns
