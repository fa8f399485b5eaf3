"""A question's answer from its features' start and end logits, as MLPerf Inference's BERT
benchmark picks it (``language/bert/accuracy-squad.py``, ``write_predictions`` with n-best 20,
max answer length 30), cut from the context by the tokenizer's offsets.

For each feature of the question, in order: the ``N_BEST`` positions of the highest start
logits and of the highest end logits (the earlier position first on a tie); each pair (start,
end) of them is a candidate when both are context tokens, the start is in its **max context**
window, the end is not before the start and the span is at most ``MAX_ANSWER_LENGTH`` tokens.
A token's max-context window, among the windows that hold it, is the one where the smaller of
its left and right context (tokens of the window before and after it) plus 0.01 times the
window's length is greatest, the first such window on a tie (``_check_is_max_context``).
The candidates of every feature are ordered by start plus end logit, highest first (candidates
of equal sums in the order found), and the first is the answer: the context's characters from
its start token's first to its end token's last (the tokenizer's offsets). MLPerf maps the span
back through BERT's basic tokenizer instead (``get_final_text``), which gives the same
characters but for whitespace inside the span (it joins words with one space, the offsets keep
the context's own, which SQuAD's normalisation makes one space again) and for a span the
heuristic cannot align (MLPerf then keeps the whole words). A question with no candidate is
answered ``"empty"``, as MLPerf answers it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

N_BEST = 20
MAX_ANSWER_LENGTH = 30
NO_ANSWER = "empty"
"""MLPerf's answer where no span is valid ("In very rare edge cases...")."""

F64 = npt.NDArray[np.float64]
U32 = npt.NDArray[np.uint32]


@dataclass(frozen=True, slots=True)
class QuestionFeatures:
    """One question's features, one row each, in window order."""

    start_logits: F64
    end_logits: F64
    context: U32
    """1 + the position's index among the context's tokens; 0 for any other token."""
    starts: U32
    """Where each context token starts in the context (characters)."""
    ends: U32
    """Where it ends."""


def max_context(context: U32) -> npt.NDArray[np.bool_]:
    """Whether each context token of each feature is in its max-context window there. Each
    token's best window is found in one pass over the windows, each scored over its tokens at
    once: work in proportion to the features' positions, not to their square."""
    spans = []
    for row in context:
        held = row[row > 0].astype(np.int64) - 1
        spans.append((int(held.min()), len(held)) if len(held) else (0, 0))
    tokens = max((start + length for start, length in spans), default=0)
    best = np.full(tokens, -1.0)
    owner = np.full(tokens, -1, dtype=np.int64)
    for w, (start, length) in enumerate(spans):
        token = np.arange(start, start + length)
        end = start + length - 1
        score = np.minimum(token - start, end - token) + 0.01 * length
        better = score > best[start : start + length]  # the first window on a tie
        best[start : start + length][better] = score[better]
        owner[start : start + length][better] = w
    out = np.zeros(context.shape, dtype=np.bool_)
    for f, row in enumerate(context):
        positions = np.flatnonzero(row)
        out[f, positions] = owner[row[positions].astype(np.int64) - 1] == f
    return out


def answer(text: str, features: QuestionFeatures) -> tuple[str, bool]:
    """The answer to a question about ``text`` and whether a span was found (``NO_ANSWER``
    otherwise)."""
    usable = max_context(features.context)
    found: list[tuple[float, int, int, int]] = []  # (score, feature, start, end), in order
    for f in range(len(features.context)):
        start_logits, end_logits = features.start_logits[f], features.end_logits[f]
        context = features.context[f]
        starts = np.argsort(-start_logits, kind="stable")[:N_BEST]
        ends = np.argsort(-end_logits, kind="stable")[:N_BEST]
        for s in (int(i) for i in starts):
            if not context[s] or not usable[f, s]:
                continue
            for e in (int(i) for i in ends):
                if not context[e] or e < s or e - s + 1 > MAX_ANSWER_LENGTH:
                    continue
                found.append((float(start_logits[s]) + float(end_logits[e]), f, s, e))
    if not found:
        return NO_ANSWER, False
    _, f, s, e = max(found, key=lambda c: c[0])  # the first of the highest, as a stable sort
    return text[int(features.starts[f, s]) : int(features.ends[f, e])], True
