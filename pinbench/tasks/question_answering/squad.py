"""SQuAD v1.1's exact match and F1, as its official evaluation script computes them
(``evaluate-v1.1.py``, which MLPerf Inference's BERT benchmark runs as
``language/bert/evaluate_v1.1.py``), computed here (the tests compare with that script's
functions and with torchmetrics' ``squad``).

An answer and a reference are **normalised**: lower case, ASCII punctuation
(``string.punctuation``) removed, the articles a, an and the (as whole words) removed, runs of
whitespace made one space and the ends stripped. **Exact match**: the normalised texts are equal
(1 or 0). **F1**: of the normalised texts' words (split on whitespace), counted with their
repeats: the words in common ``c``, precision ``c / len(answer)``, recall
``c / len(reference)``, F1 their harmonic mean, 0 when nothing is in common. Each question takes
its best over its references; the run records the mean over the questions scored, **times 100**
as the script prints them (``squad_exact_match_pct``, ``squad_f1_pct``: 0 to 100, not 0 to 1).
The sums run in question order and are scaled as the script scales them, so the figures are the
script's to the last bit."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (the script's order)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def f1(answer: str, reference: str) -> float:
    said = normalize_answer(answer).split()
    meant = normalize_answer(reference).split()
    same = sum((Counter(said) & Counter(meant)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(said)
    recall = 1.0 * same / len(meant)
    return (2 * precision * recall) / (precision + recall)


def exact_match(answer: str, reference: str) -> bool:
    return normalize_answer(answer) == normalize_answer(reference)


def best(metric: Callable[[str, str], float], answer: str, references: Sequence[str]) -> float:
    """The metric of ``answer`` against its best reference."""
    return max(metric(answer, r) for r in references)


def squad_scores(answers: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
    """``squad_exact_match_pct`` and ``squad_f1_pct`` of each answer against its question's
    references (at least one each), and ``questions_count``."""
    assert answers and len(answers) == len(references)
    matched = scored = 0.0
    for answer, refs in zip(answers, references, strict=True):
        matched += best(exact_match, answer, refs)
        scored += best(f1, answer, refs)
    total = len(answers)
    return {
        "squad_exact_match_pct": 100.0 * matched / total,
        "squad_f1_pct": 100.0 * scored / total,
        "questions_count": float(total),
    }
