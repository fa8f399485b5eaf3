"""Answers against references: ROUGE-1/2/L and exact match; perplexity from per-token losses.

ROUGE as Google's ``rouge-score`` computes it (the implementation MLPerf Inference's LLM
benchmarks use; it ships no wheel, so an evaluation environment could not pin it, and these
forty lines are checked against it in ``tests/test_generation_scores.py``): text lower-cased,
every run of characters other than ``a-z0-9`` a space, no stemming; ROUGE-N is the F-measure
of the n-gram overlap (counts clipped), ROUGE-L of the longest common subsequence; each
answer's F-measure, averaged over the answers (as MLPerf's evaluation reports it). A reference
with no such token has no ROUGE (its recall is 0/0): the run fails naming it (decision 115: an
undefined metric is never a 0.0); an answer with none recalls none of its reference's words,
which is a defined 0 (as ``rouge-score`` gives it). Exact match compares the texts with
surrounding whitespace stripped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from pinbench.evaluator.undefined import UndefinedMetric

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def words(text: str) -> list[str]:
    """``rouge_score.tokenize.tokenize(text, None)``."""
    return [w for w in _NOT_WORD.sub(" ", text.lower()).split() if w]


def _f(overlap: int, predicted: int, target: int) -> float:
    if overlap == 0:
        return 0.0
    precision, recall = overlap / predicted, overlap / target
    return 2 * precision * recall / (precision + recall)


def rouge_n(answer: list[str], reference: list[str], n: int) -> float:
    def grams(tokens: list[str]) -> Counter[tuple[str, ...]]:
        return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))

    a, r = grams(answer), grams(reference)
    overlap = sum(min(count, r[g]) for g, count in a.items())
    return _f(overlap, sum(a.values()), sum(r.values()))


def lcs_length(a: list[str], b: list[str]) -> int:
    """The longest common subsequence's length, bit-parallel (Crochemore et al. 2001): one
    big-integer step per word of ``a`` over ``len(b)`` bits, so a long answer against a long
    reference (a published dataset's, up to a MiB a line) costs seconds, not the hours of the
    quadratic table."""
    if not a or not b:
        return 0
    where: dict[str, int] = {}
    for i, word in enumerate(b):
        where[word] = where.get(word, 0) | (1 << i)
    mask = (1 << len(b)) - 1
    v = mask
    for word in a:
        u = v & where.get(word, 0)
        v = ((v + u) | (v - u)) & mask
    return len(b) - v.bit_count()


def rouge_l(answer: list[str], reference: list[str]) -> float:
    return _f(lcs_length(answer, reference), len(answer), len(reference))


def rouge_and_exact(answers: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    if len(answers) != len(references) or not answers:
        raise ValueError(f"{len(answers)} answers for {len(references)} references")
    totals = {"rouge1": 0.0, "rouge2": 0.0, "rouge_l": 0.0}
    exact = 0
    for i, (answer, reference) in enumerate(zip(answers, references, strict=True)):
        a, r = words(answer), words(reference)
        if not r:
            raise UndefinedMetric(
                metric="rouge",
                reason=f"sample {i}'s reference has no word ROUGE counts ({reference[:40]!r})",
            )
        totals["rouge1"] += rouge_n(a, r, 1)
        totals["rouge2"] += rouge_n(a, r, 2)
        totals["rouge_l"] += rouge_l(a, r)
        exact += answer.strip() == reference.strip()
    n = len(answers)
    out = {key: value / n for key, value in totals.items()}
    out["exact_match"] = exact / n
    return out


def perplexity(losses: Sequence[float], tokens: int) -> float:
    """exp(total negative log-likelihood / tokens scored)."""
    if tokens <= 0:
        raise UndefinedMetric(metric="perplexity", reason="no reference token was scored")
    value = math.exp(math.fsum(losses) / tokens)
    if not math.isfinite(value):
        raise UndefinedMetric(metric="perplexity", reason="it came out infinite")
    return value
