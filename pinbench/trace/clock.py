"""The trace's one clock is ``time.perf_counter_ns``; profilers that stamp events with the wall
clock are brought onto it through a pair of readings taken as close together as possible."""

from __future__ import annotations

import time


def wall_minus_perf(tries: int = 7) -> int:
    """``time_ns() - perf_counter_ns()``, from the tightest of ``tries`` bracketed readings."""
    best: tuple[int, int] | None = None
    for _ in range(tries):
        a = time.perf_counter_ns()
        wall = time.time_ns()
        b = time.perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, wall - (a + b) // 2)
    assert best is not None
    return best[1]


def bracketed_offset(
    stamps: list[tuple[int, int]], readings: list[tuple[int, int]]
) -> tuple[int, int] | None:
    """Where (profiler clock - ``perf_counter_ns``) certainly lies, from anchor events: the
    profiler stamped anchor ``i`` at ``stamps[i]`` (start, end on its clock) while
    ``perf_counter_ns`` read ``readings[i]`` (before, after) around it, so the offset is in
    ``[end - after, start - before]``; the bounds of all anchors together (the tightest).
    None when the anchors and readings do not pair up, or their bounds do not overlap (the
    clocks are not one offset apart)."""
    if not stamps or len(stamps) != len(readings):
        return None
    low = max(end - after for (_, end), (_, after) in zip(stamps, readings, strict=True))
    high = min(start - before for (start, _), (before, _) in zip(stamps, readings, strict=True))
    return (low, high) if low <= high else None
