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

from pinbench.tasks.notes.truth import Notes

ONSET_TOLERANCE = 0.05
PITCH_TOLERANCE = 50.0
OFFSET_RATIO = 0.2
OFFSET_MIN_TOLERANCE = 0.05
DECIMALS = 4


def hertz(midi: Notes) -> Notes:
    out: Notes = 440.0 * (2.0 ** ((midi - 69.0) / 12.0))
    return out


def matched_count(reference: Notes, estimated: Notes, *, offsets: bool) -> int:
    """How many notes a maximum matching of ``estimated`` to ``reference`` pairs."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    if not len(reference) or not len(estimated):
        return 0
    onset = np.around(np.abs(np.subtract.outer(reference[:, 0], estimated[:, 0])), DECIMALS)
    hit = onset <= ONSET_TOLERANCE
    cents = np.abs(
        1200 * np.subtract.outer(np.log2(hertz(reference[:, 2])), np.log2(hertz(estimated[:, 2])))
    )
    hit &= cents <= PITCH_TOLERANCE
    if offsets:
        offset = np.around(np.abs(np.subtract.outer(reference[:, 1], estimated[:, 1])), DECIMALS)
        durations = reference[:, 1] - reference[:, 0]
        tolerance = np.maximum(OFFSET_RATIO * durations, OFFSET_MIN_TOLERANCE)
        hit &= offset <= tolerance[:, None]
    if not hit.any():
        return 0
    matching = maximum_bipartite_matching(csr_matrix(hit.astype(np.int8)), perm_type="column")
    return int(np.count_nonzero(matching >= 0))
