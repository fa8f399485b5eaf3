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
