"""Bringing a profiler's events onto the trace's clock.

A first estimate of the offset between the profiler's clock and ``perf_counter_ns`` comes from
the profiler (a wall-clock pair, or an anchor event); it can be several microseconds off. The
framework runs only inside pinbench's own spans (loading the model, each ``predict``), so the
offset is refined to the value that puts the most events inside the span they were issued in
(a sweep over each event's feasible interval), starting from the estimate and moving the
least. Events that overhang their span by no more than the profiler's resolution are clamped
into it (ONNX Runtime stamps whole microseconds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Alignment:
    offset_ns: int
    """Profiler clock minus ``perf_counter_ns``, as applied."""
    shift_ns: int
    """How far the estimate moved."""
    span: npt.NDArray[np.intp]
    """For each event, the index of the span it lies in, or -1."""
    start_ns: I64
    end_ns: I64
    """Each event on the trace's clock (clamped where it overhung by the resolution or less)."""

    @property
    def contained(self) -> int:
        return int(np.count_nonzero(self.span >= 0))


def _assign(starts: I64, ends: I64, points: I64) -> npt.NDArray[np.intp]:
    idx = np.searchsorted(starts, points, side="right") - 1
    ok = idx >= 0
    ok[ok] = points[ok] <= ends[idx[ok]]
    return np.where(ok, idx, -1)


def best_point(lo: I64, hi: I64, prefer: int) -> int:
    """The integer covered by the most intervals ``[lo_i, hi_i]``; of those, nearest ``prefer``."""
    if lo.size == 0:
        return prefer
    pos = np.concatenate([lo, hi + 1])
    delta = np.concatenate([np.ones(lo.size, np.int64), -np.ones(hi.size, np.int64)])
    order = np.lexsort((-delta, pos))  # at one position, openings before closings
    pos, cover = pos[order], np.cumsum(delta[order])
    best = cover.max()
    at = np.nonzero(cover[:-1] == best)[0]
    left, right = pos[at], pos[at + 1] - 1  # regions [left, right] with the best cover
    left, right = left[left <= right], right[left <= right]
    if left.size == 0:
        return int(pos[np.argmax(cover)])
    nearest = np.clip(prefer, left, right)
    return int(nearest[np.argmin(np.abs(nearest - prefer))])


def align(
    starts: I64, ends: I64, ev_start: I64, ev_end: I64, *, offset_ns: int, resolution_ns: int = 1
) -> Alignment:
    """Align events (profiler clock) to spans (``perf_counter_ns``, sorted, not overlapping)."""
    offset = offset_ns
    for _ in range(2):  # assign with the estimate, refine, assign again with the refinement
        idx = _assign(starts, ends, (ev_start + ev_end) // 2 - offset)
        m = idx >= 0
        lo = ev_end[m] - ends[idx[m]] - resolution_ns
        hi = ev_start[m] - starts[idx[m]] + resolution_ns
        fits = lo <= hi
        offset = best_point(lo[fits], hi[fits], offset)
    start, end = ev_start - offset, ev_end - offset
    idx = _assign(starts, ends, (start + end) // 2)
    m = idx >= 0
    tol = resolution_ns
    inside = np.ones(idx.size, dtype=bool)
    inside[m] = (start[m] >= starts[idx[m]] - tol) & (end[m] <= ends[idx[m]] + tol)
    idx = np.where(inside, idx, -1)
    m = idx >= 0
    start[m] = np.maximum(start[m], starts[idx[m]])
    end[m] = np.minimum(end[m], ends[idx[m]])
    return Alignment(offset, offset - offset_ns, idx, start, end)
