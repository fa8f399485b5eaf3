"""Text-recognition parity: the text each sample decodes to in both runs (``runs parity``).

A run records each sample's best path, ``(N, T)`` class indexes. Collapsed as CTC decodes
them (repeats merged, the run's own blank dropped) and each class taken as its place in the
alphabet (a class after the blank is one place lower), they are the decoded texts as alphabet
entries: two runs agree when every sample's are the same. The two models are taken to read one
alphabet (parity compares exports of one model); their blank may differ.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.tasks.parity import Agreement, Figure, Incomparable, Recorded, same_samples
from pinbench.tasks.text_recognition.metrics import edit_distance


def labels_of(recorded: Recorded) -> list[npt.NDArray[np.int64]]:
    """Each sample's decoded text as alphabet entries (class indexes without the blank, those
    after it one lower: the same text whichever index the blank has)."""
    output = next((o for o in recorded.model.outputs if str(o.name) == recorded.outputs_name), None)
    paths = np.asarray(recorded.outputs)
    if output is None or output.ctc is None or paths.ndim != 2:
        raise Incomparable(
            run=recorded.run,
            reason="it recorded no best paths of a `type: text` output (N, T)",
        )
    blank = output.ctc.blank
    out = []
    for path in paths.astype(np.int64):
        kept = np.ones(path.shape, dtype=bool)
        kept[1:] = path[1:] != path[:-1]
        chars = path[kept & (path != blank)]
        out.append(chars - (chars > blank))
    return out


def text_parity(reference: Recorded, other: Recorded) -> Agreement:
    """How many samples decode to the same text in both runs, and the character edits between
    the runs' texts; the runs agree when every text is the same."""
    ref, out = labels_of(reference), labels_of(other)
    same_samples(ref, out, run=other.run)
    same = sum(np.array_equal(a, b) for a, b in zip(ref, out, strict=True))
    edits = sum(edit_distance(a, b) for a, b in zip(ref, out, strict=True))
    return Agreement(
        (
            Figure("texts_agree", "same text", float(same), "count"),
            Figure("samples", "samples", float(len(ref)), "count"),
            Figure("character_edits", "character edits", float(edits), "count"),
        ),
        same == len(ref),
        "every sample decodes to the same text",
    )
