"""Bringing a profiler's events onto the trace's clock.

A first estimate of the offset between the profiler's clock and ``perf_counter_ns`` comes from
the profiler (a wall-clock pair, or an anchor event); it can be several microseconds off. The
framework runs only inside pinbench's own spans (loading the model, each ``predict``), so the
offset is refined to the value that puts the most events inside the span they were issued in
(a sweep over each event's feasible interval), starting from the estimate and moving the
least. Events that overhang their span by no more than the profiler's resolution are clamped
into it (ONNX Runtime stamps whole microseconds).

Where the profiler also says where the offset certainly lies (an anchor event stamped between
two ``perf_counter_ns`` readings: TensorFlow's), the refinement stays within those bounds.
Counting is only a vote: a profiler's runtime spans are not all inside pinbench's (an executor
thread finishes its bookkeeping after it has woken the caller), and an event near a span's edge
is assigned by where the estimate puts it, so the most-covered offset can lie tens of
microseconds from the true one, far enough to push real operators out of their ``predict``.
A bracketed reading cannot be outvoted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
ROUNDS = 8
REACH_NS = 100_000
"""How far outside a span an event may seem to lie and still count as issued in it: the
first estimate's error (a few microseconds from a wall-clock pair, tens from an anchor)."""


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


def _nearest(starts: I64, ends: I64, points: I64, reach: int) -> npt.NDArray[np.intp]:
    """The span each point lies in, or the nearer one when it lies in a gap no more than
    ``reach`` from a span's edge (the estimate's error can push an event just outside)."""
    idx = np.searchsorted(starts, points, side="right") - 1
    before = np.maximum(idx, 0)
    after = np.minimum(idx + 1, starts.size - 1)
    to_before = np.where(idx >= 0, points - ends[before], np.iinfo(np.int64).max)
    to_after = np.where(idx + 1 < starts.size, starts[after] - points, np.iinfo(np.int64).max)
    inside = (idx >= 0) & (to_before <= 0)
    pick = np.where(to_after < to_before, after, before)
    near = np.minimum(np.maximum(to_before, 0), to_after) <= reach
    return np.where(inside, idx, np.where(near, pick, -1))


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
    starts: I64,
    ends: I64,
    ev_start: I64,
    ev_end: I64,
    *,
    offset_ns: int,
    resolution_ns: int = 1,
    bounds: tuple[int, int] | None = None,
) -> Alignment:
    """Align events (profiler clock) to spans (``perf_counter_ns``, sorted, not overlapping);
    ``bounds``: the offset certainly lies in ``[low, high]`` (the estimate is moved into it)."""
    low, high = bounds if bounds is not None else (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
    offset = min(max(offset_ns, low), high)
    for _ in range(ROUNDS):  # assign, refine, reassign with the refinement until it settles
        idx = _nearest(starts, ends, (ev_start + ev_end) // 2 - offset, REACH_NS)
        m = idx >= 0
        lo = np.maximum(ev_end[m] - ends[idx[m]] - resolution_ns, low)
        hi = np.minimum(ev_start[m] - starts[idx[m]] + resolution_ns, high)
        fits = lo <= hi
        refined = best_point(lo[fits], hi[fits], offset)
        if refined == offset:
            break
        offset = refined
    start, end = ev_start - offset, ev_end - offset
    idx = _nearest(starts, ends, (start + end) // 2, resolution_ns)
    m = idx >= 0
    tol = resolution_ns
    inside = np.ones(idx.size, dtype=bool)
    inside[m] = (start[m] >= starts[idx[m]] - tol) & (end[m] <= ends[idx[m]] + tol)
    idx = np.where(inside, idx, -1)
    m = idx >= 0
    start[m] = np.maximum(start[m], starts[idx[m]])
    end[m] = np.minimum(end[m], ends[idx[m]])
    return Alignment(offset, offset - offset_ns, idx, start, end)
