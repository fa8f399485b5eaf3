"""Frames: where a sample's speech spans (seconds) meet its streamed frames.

Frame ``k`` of a sample streamed in chunks of ``chunk`` samples at ``rate`` Hz covers its
samples ``[k * chunk, (k + 1) * chunk)``, the seconds ``[k * chunk / rate, (k + 1) * chunk /
rate)``; a sample of ``L`` samples has ``ceil(L / chunk)`` frames, the last padded
(``pinbench.worker.stream``). A frame is speech when its centre, ``(k + 1/2) * chunk /
rate`` seconds, lies in a span ``[start, end)``. Computed exactly: the centre is a fraction,
a span's ends the decimals they were written as (the shortest decimal of each float: ``0.4``
is 2/5, not the float's binary value a little above it), so a centre on a labelled boundary
is decided as the label means it."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pinbench.tasks.vad.truth import Span


def past_end(end: float, frames: int, chunk: int, rate: int) -> bool:
    """Whether a span ending at ``end`` ends after the seconds ``frames`` frames cover. The end
    is compared with the float nearest those seconds: a label written as the clip's length
    (``0.1`` for 1,600 samples at 16 kHz, a float a little above 1/10) is not past it."""
    return end > float(covered_seconds(frames, chunk, rate))


def first_frame_at(seconds: float, chunk: int, rate: int) -> int:
    """The first frame whose centre is at or after ``seconds``: the least ``k`` with
    ``(2k + 1) * chunk >= 2 * rate * seconds``, ``seconds`` read as the decimal it was written
    as (``repr``: the shortest one that is this float)."""
    return max(0, math.ceil((Fraction(repr(float(seconds))) * 2 * rate / chunk - 1) / 2))


def speech_frames(spans: list[Span], frames: int, chunk: int, rate: int) -> npt.NDArray[np.bool_]:
    """Which of a sample's ``frames`` frames are speech."""
    speech = np.zeros(frames, dtype=bool)
    for start, end in spans:
        lo = min(first_frame_at(start, chunk, rate), frames)
        hi = min(first_frame_at(end, chunk, rate), frames)
        speech[lo:hi] = True
    return speech


def covered_seconds(frames: int, chunk: int, rate: int) -> Fraction:
    """The seconds a sample's frames cover (its length, up to the last chunk's padding)."""
    return Fraction(frames * chunk, rate)
