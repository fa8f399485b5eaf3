"""Which estimated notes match which reference notes: ``mir_eval.transcription.match_notes``'s
rule with its defaults, computed here (the host imports no mir_eval; the tests compare with
it). An estimated note may match a reference note when

- their onsets are within ``ONSET_TOLERANCE`` (50 ms), the distance rounded to 4 decimals
  first (mir_eval's ``N_DECIMALS``, so that a distance of exactly 50 ms matches);
- their pitches are within ``PITCH_TOLERANCE`` (50 cents), each MIDI number taken to hertz as
  ``mir_eval.util.midi_to_hz`` does, ``440 * 2 ** ((m - 69) / 12)``, and the distance in cents
  ``1200 * |log2 f_ref - log2 f_est|``;
- with offsets, their offsets are within ``max(OFFSET_RATIO * duration, OFFSET_MIN_TOLERANCE)``
  of the reference note's duration (20 %, at least 50 ms), rounded likewise;

every comparison at equality (mir_eval's ``strict=False``). The matches are a maximum matching
of that bipartite graph (each note in at most one match): its size is what the metrics count,
the same for every maximum matching (scipy's Hopcroft-Karp here, mir_eval's own Hopcroft-Karp
there)."""

from __future__ import annotations

import numpy as np

from pinbench.errors import UserError
from pinbench.tasks.notes.truth import Notes

ONSET_TOLERANCE = 0.05
PITCH_TOLERANCE = 50.0
OFFSET_RATIO = 0.2
OFFSET_MIN_TOLERANCE = 0.05
DECIMALS = 4


def hertz(midi: Notes) -> Notes:
    out: Notes = 440.0 * (2.0 ** ((midi - 69.0) / 12.0))
    return out


MAX_PAIRS = 10_000_000
"""The most (reference, estimated) pairs whose onsets are close enough to be compared, per
file: what the host holds while it matches (a few arrays of this many numbers)."""
SLACK = 1e-4
"""Onsets this much past the tolerance are still compared: a distance is rounded to 4 decimals
before it is judged, so 0.05004 matches."""


class TooManyPairs(UserError):
    """A file's notes pair up past ``MAX_PAIRS`` within the onset tolerance."""

    def __init__(self, *, pairs: int) -> None:
        super().__init__(
            f"{pairs} note pairs lie within {ONSET_TOLERANCE * 1000:.0f} ms of each other in one "
            f"file, over the {MAX_PAIRS} the host compares"
        )
        self.pairs = pairs


def matched_count(reference: Notes, estimated: Notes, *, offsets: bool) -> int:
    """How many notes a maximum matching of ``estimated`` to ``reference`` pairs. Only the pairs
    whose onsets lie within the tolerance are compared (found by sorting the estimated onsets),
    never every pair: the estimated notes are the system under test's answer, and their number
    must not set the host's memory (``MAX_PAIRS``)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    if not len(reference) or not len(estimated):
        return 0
    order = np.argsort(estimated[:, 0], kind="stable")
    onsets = estimated[order, 0]
    reach = ONSET_TOLERANCE + SLACK
    lo = np.searchsorted(onsets, reference[:, 0] - reach, side="left")
    hi = np.searchsorted(onsets, reference[:, 0] + reach, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if total > MAX_PAIRS:
        raise TooManyPairs(pairs=total)
    if not total:
        return 0
    rows = np.repeat(np.arange(len(reference)), counts)
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    cols = order[np.repeat(lo, counts) + within]
    ref, est = reference[rows], estimated[cols]
    hit = np.around(np.abs(ref[:, 0] - est[:, 0]), DECIMALS) <= ONSET_TOLERANCE
    cents = np.abs(1200 * (np.log2(hertz(ref[:, 2])) - np.log2(hertz(est[:, 2]))))
    hit &= cents <= PITCH_TOLERANCE
    if offsets:
        offset = np.around(np.abs(ref[:, 1] - est[:, 1]), DECIMALS)
        tolerance = np.maximum(OFFSET_RATIO * (ref[:, 1] - ref[:, 0]), OFFSET_MIN_TOLERANCE)
        hit &= offset <= tolerance
    if not hit.any():
        return 0
    graph = csr_matrix(
        (np.ones(int(hit.sum()), dtype=np.int8), (rows[hit], cols[hit])),
        shape=(len(reference), len(estimated)),
    )
    matching = maximum_bipartite_matching(graph, perm_type="column")
    return int(np.count_nonzero(matching >= 0))
