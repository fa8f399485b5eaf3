"""Answers against references: ROUGE-1/2/L and exact match; perplexity from per-token losses.

ROUGE as MLPerf Inference's LLM accuracy scripts compute it: Google's ``rouge-score`` with
``use_stemmer=True`` (decision 161). Text lower-cased, every run of characters other than
``a-z0-9`` a space, each word of more than 3 characters stemmed by nltk's Porter stemmer (its
default mode, as ``rouge_score.tokenizers.DefaultTokenizer`` makes it), words that are not
``[a-z0-9]+`` then dropped; ROUGE-N is the F-measure of the n-gram overlap (counts clipped),
ROUGE-L of the longest common subsequence; each answer's F-measure, averaged over the answers
(as MLPerf's evaluation reports it). These lines are ``rouge-score``'s and the stemmer is
nltk's, copied (``porter``), so that they run in every evaluation environment as its
hash-pinned requirements stand (decision 161); ``tests/test_generation_scores.py`` checks both
against the packages themselves. ``rouge1``, ``rouge2`` and ``rouge_l`` are that
variant; ``rouge1_unstemmed``... the same without stemming (``use_stemmer=False``, what
pinbench recorded as ``rouge1``... before). A reference with no such word has no ROUGE (its
recall is 0/0): the run fails naming it (decision 115: an undefined metric is never a 0.0);
an answer with none recalls none of its reference's words, which is a defined 0 (as
``rouge-score`` gives it). Exact match compares the texts with surrounding whitespace stripped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

from pinbench.evaluator.undefined import UndefinedMetric
from pinbench.tasks.generation.porter import PorterStemmer

ROUGE_VARIANT = "mlperf (rouge-score, use_stemmer=True)"
"""What ``rouge1``, ``rouge2`` and ``rouge_l`` are (a run's ``details.generation``)."""
STEMMER = "nltk 3.10.4 PorterStemmer (NLTK_EXTENSIONS), pinbench's copy"
"""Which stemmer made the stems (a run's ``details.generation``)."""
UNSTEMMED = "_unstemmed"
"""The suffix of the same metrics without stemming (``use_stemmer=False``)."""
STEM_LONGER_THAN = 3
"""``rouge_score.tokenize``: only words of more characters are stemmed."""

_NOT_WORD = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[a-z0-9]+")

Stem = Callable[[str], str]


def porter_stemmer() -> Stem:
    """nltk's Porter stemmer in its default mode (``NLTK_EXTENSIONS``), as rouge-score makes
    it, each word's stem remembered."""
    stem: Stem = lru_cache(maxsize=1 << 16)(PorterStemmer().stem)
    return stem


def words(text: str, stem: Stem | None = None) -> list[str]:
    """``rouge_score.tokenize.tokenize(text, stemmer)``."""
    tokens = _NOT_WORD.sub(" ", text.lower()).split()
    if stem is not None:
        tokens = [stem(t) if len(t) > STEM_LONGER_THAN else t for t in tokens]
    return [t for t in tokens if _WORD.fullmatch(t)]


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
    """``rouge1``, ``rouge2``, ``rouge_l`` (stemmed: MLPerf's), the same ``_unstemmed``, and
    ``exact_match``, each averaged over the answers."""
    if len(answers) != len(references) or not answers:
        raise ValueError(f"{len(answers)} answers for {len(references)} references")
    stem = porter_stemmer()
    keys = [k + suffix for suffix in ("", UNSTEMMED) for k in ("rouge1", "rouge2", "rouge_l")]
    totals = dict.fromkeys(keys, 0.0)
    exact = 0
    for i, (answer, reference) in enumerate(zip(answers, references, strict=True)):
        if not words(reference):
            raise UndefinedMetric(
                metric="rouge",
                reason=f"sample {i}'s reference has no word ROUGE counts ({reference[:40]!r})",
            )
        for suffix, stemmer in (("", stem), (UNSTEMMED, None)):
            a, r = words(answer, stemmer), words(reference, stemmer)
            totals["rouge1" + suffix] += rouge_n(a, r, 1)
            totals["rouge2" + suffix] += rouge_n(a, r, 2)
            totals["rouge_l" + suffix] += rouge_l(a, r)
        exact += answer.strip() == reference.strip()
    n = len(answers)
    out = {key: total / n for key, total in totals.items()}
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
