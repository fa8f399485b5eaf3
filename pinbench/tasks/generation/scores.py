"""Answers against references: ROUGE-1/2/L and exact match; perplexity from per-token losses.

ROUGE is MLPerf Inference's (decision 161), computed by the library its LLM accuracy scripts
call (decision 277): Google's ``rouge-score``, ``RougeScorer(["rouge1", "rouge2", "rougeL"],
use_stemmer=True)`` (its tokenizer, nltk's Porter stemmer), each answer scored against its
reference (``score(reference, answer)``) and each F-measure averaged over the answers, as
MLPerf's ``evaluation.py`` averages ``use_aggregator=False``'s. ``rouge1_unstemmed``... are the
same with ``use_stemmer=False``. The host scores (``evaluator.scoring.score_texts``); rouge-score
and nltk are pinbench's dependencies, imported when scoring starts (some 3 s), never by the
evaluator, whose environment has neither.

A reference with no word rouge-score counts has no ROUGE (its recall is 0/0, which rouge-score
gives as 0): the run fails naming it (decision 115: an undefined metric is never a 0.0); an
answer with none recalls none of its reference's words, a defined 0. rouge-score's ROUGE-L
fills a table of one Python integer per pair of words (answer by reference), so a pair of more
than ``MAX_LCS_CELLS`` fails the run naming it rather than hold the host's memory and time.
Exact match compares the texts with surrounding whitespace stripped.

Not recorded: ``rougeLsum``, which MLPerf reports over answers and references split into
sentences by nltk's ``sent_tokenize``: that needs nltk's trained Punkt model, which no package
of the registries pinbench installs from carries (``nltk.download`` fetches it from elsewhere
at run time), and a split of another kind would be another number (decision 277).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib.metadata import version

from pinbench.errors import UserError
from pinbench.tasks.base import Scored
from pinbench.worker.undefined import UndefinedMetric

ROUGE_VARIANT = "mlperf (rouge-score, use_stemmer=True)"
"""What ``rouge1``, ``rouge2`` and ``rouge_l`` are (a run's ``details.generation``)."""
UNSTEMMED = "_unstemmed"
"""The suffix of the same metrics without stemming (``use_stemmer=False``)."""
ROUGE_TYPES = {"rouge1": "rouge1", "rouge2": "rouge2", "rouge_l": "rougeL"}
"""pinbench's names of rouge-score's ROUGE types."""
MAX_LCS_CELLS = 10_000_000
"""The most word pairs (an answer's words times its reference's) ROUGE-L scores: rouge-score's
table of that many cells takes some 80 MB and 4 s on a two-core machine (MLPerf's pairs take
well under a million)."""


class TooLongForRouge(UserError):
    """An answer and its reference whose ROUGE-L table would be larger than ``MAX_LCS_CELLS``."""

    def __init__(self, *, sample: int, answer_words: int, reference_words: int) -> None:
        super().__init__(
            f"sample {sample}'s answer ({answer_words} words) and reference ({reference_words} "
            f"words) are too long for ROUGE-L: rouge-score's table of their "
            f"{answer_words * reference_words} word pairs is over the {MAX_LCS_CELLS} it scores"
        )
        self.sample = sample
        self.answer_words = answer_words
        self.reference_words = reference_words


def rouge_and_exact(answers: Sequence[str], references: Sequence[str]) -> Scored:
    """``rouge1``, ``rouge2``, ``rouge_l`` (stemmed: MLPerf's), the same ``_unstemmed``, and
    ``exact_match``, each averaged over the answers; the details name the scorer."""
    from rouge_score import rouge_scorer, tokenizers

    if len(answers) != len(references) or not answers:
        raise ValueError(f"{len(answers)} answers for {len(references)} references")
    words = tokenizers.DefaultTokenizer(use_stemmer=False)  # stemming keeps every word
    types = list(ROUGE_TYPES.values())
    scorers = {
        "": rouge_scorer.RougeScorer(types, use_stemmer=True),
        UNSTEMMED: rouge_scorer.RougeScorer(types, use_stemmer=False),
    }
    totals = {key + suffix: 0.0 for suffix in scorers for key in ROUGE_TYPES}
    exact = 0
    for i, (answer, reference) in enumerate(zip(answers, references, strict=True)):
        target = len(words.tokenize(reference))
        if not target:
            raise UndefinedMetric(
                metric="rouge",
                reason=f"sample {i}'s reference has no word ROUGE counts ({reference[:40]!r})",
            )
        predicted = len(words.tokenize(answer))
        if predicted * target > MAX_LCS_CELLS:
            raise TooLongForRouge(sample=i, answer_words=predicted, reference_words=target)
        for suffix, scorer in scorers.items():
            scores = scorer.score(reference, answer)
            for key, kind in ROUGE_TYPES.items():
                totals[key + suffix] += scores[kind].fmeasure
        exact += answer.strip() == reference.strip()
    n = len(answers)
    metrics = {key: total / n for key, total in totals.items()}
    metrics["exact_match"] = exact / n
    details = {
        "rouge_variant": ROUGE_VARIANT,  # of rouge1, rouge2, rouge_l
        "scorer": f"rouge-score {version('rouge-score')}",
        "stemmer": f"nltk {version('nltk')} PorterStemmer (NLTK_EXTENSIONS)",
    }
    return Scored(metrics, details=details)


def model_metrics(losses: Sequence[tuple[float, int]]) -> dict[str, float]:
    """What a text-generation run's evaluator records of the task (``Metric.by_model``): the
    references' ``perplexity`` from each one's (negative log-likelihood, tokens scored)."""
    return {"perplexity": perplexity([loss for loss, _ in losses], sum(n for _, n in losses))}


def perplexity(losses: Sequence[float], tokens: int) -> float:
    """exp(total negative log-likelihood / tokens scored)."""
    if tokens <= 0:
        raise UndefinedMetric(metric="perplexity", reason="no reference token was scored")
    value = math.exp(math.fsum(losses) / tokens)
    if not math.isfinite(value):
        raise UndefinedMetric(metric="perplexity", reason="it came out infinite")
    return value
