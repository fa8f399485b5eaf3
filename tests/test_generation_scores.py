"""Text generation's ROUGE (decision 277): what pinbench records is rouge-score's own result
(``use_stemmer=True``, MLPerf's; ``use_stemmer=False`` for the ``_unstemmed`` names), averaged
over the answers as MLPerf's evaluation averages it, and that result is the definition the docs
give, computed here directly (the tokenizer's rules written out, nltk's Porter stemmer, the
clipped n-gram overlap, the textbook LCS table) on texts the implementation did not choose."""

from __future__ import annotations

import re
import time
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.tasks.generation.scores import (
    MAX_LCS_CELLS,
    TooLongForRouge,
    perplexity,
    rouge_and_exact,
)
from pinbench.worker.undefined import UndefinedMetric

WORDS = ["the", "cat", "sat", "on", "a", "mat", "Mat!", "dog's", "42", "x-y", "é", ""]
INFLECTED = [
    *("running", "runs", "ran", "studies", "studied", "studying", "cats", "caresses"),
    *("ponies", "happily", "generalizations", "agreed", "feed", "hopping", "Running!"),
    *("STUDIES", "naïve", "İstanbul", "\u212aelvin", "résumés", "x2y", "1990s", "ies"),
]
text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=30).map(" ".join)
inflected = st.lists(
    st.one_of(st.sampled_from(INFLECTED), st.from_regex(r"[a-z]{1,14}", fullmatch=True)),
    max_size=30,
).map(" ".join)
any_text = st.one_of(text, inflected, st.text(max_size=80))
KEYS = ("rouge1", "rouge2", "rouge_l")


def _words(text: str, stemmed: bool) -> list[str]:
    """The docs' tokenizer written out: lower-case, every run of characters other than
    ``a-z0-9`` a space, words of more than 3 characters stemmed by nltk's Porter stemmer (its
    default mode), words not ``[a-z0-9]+`` dropped."""
    from nltk.stem.porter import PorterStemmer

    stem = PorterStemmer().stem
    tokens = re.sub(r"[^a-z0-9]+", " ", text.lower()).split()
    if stemmed:
        tokens = [stem(t) if len(t) > 3 else t for t in tokens]
    return [t for t in tokens if re.fullmatch(r"[a-z0-9]+", t)]


def _f(overlap: int, predicted: int, target: int) -> float:
    if not overlap:
        return 0.0
    precision, recall = overlap / predicted, overlap / target
    return 2 * precision * recall / (precision + recall)


def _lcs(a: list[str], b: list[str]) -> int:
    previous = [0] * (len(b) + 1)
    for word in a:
        row = [0]
        for j, other in enumerate(b, start=1):
            row.append(previous[j - 1] + 1 if word == other else max(previous[j], row[j - 1]))
        previous = row
    return previous[-1]


def _direct(answer: str, reference: str, stemmed: bool) -> dict[str, float]:
    """ROUGE-1, -2 (clipped n-gram overlap) and -L (longest common subsequence) F-measures."""
    a, r = _words(answer, stemmed), _words(reference, stemmed)
    out = {}
    for n, key in ((1, "rouge1"), (2, "rouge2")):
        ga = Counter(tuple(a[i : i + n]) for i in range(len(a) - n + 1))
        gr = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
        overlap = sum(min(count, gr[g]) for g, count in ga.items())
        out[key] = _f(overlap, sum(ga.values()), sum(gr.values()))
    out["rouge_l"] = _f(_lcs(a, r), len(a), len(r))
    return out


def _rouge_score(answer: str, reference: str, stemmed: bool) -> dict[str, float]:
    """rouge-score's own F-measures, as MLPerf calls it."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stemmed)
    score = scorer.score(reference, answer)
    kinds = ("rouge1", "rouge2", "rougeL")
    return {key: score[kind].fmeasure for key, kind in zip(KEYS, kinds, strict=True)}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(any_text, any_text), min_size=1, max_size=5))
def test_rouge_is_rouge_scores_own_and_the_documented_definition(
    pairs: list[tuple[str, str]],
) -> None:
    """Each recorded figure is the mean over the answers of rouge-score's F-measure, stemmed
    (plain names) and not (``_unstemmed``), and equals the definition computed directly."""
    pairs = [(a, r) for a, r in pairs if _words(r, False)]
    if not pairs:
        return
    got = rouge_and_exact([a for a, _ in pairs], [r for _, r in pairs]).metrics
    for stemmed, suffix in ((True, ""), (False, "_unstemmed")):
        for source in (_rouge_score, _direct):
            each = [source(a, r, stemmed) for a, r in pairs]
            for key in KEYS:
                expected = sum(e[key] for e in each) / len(pairs)
                assert got[key + suffix] == pytest.approx(expected, abs=1e-12), (key, pairs)


# (answer, reference, expected figures, why): worked by hand from the definition.
CASES = [
    (
        "the cat sat",
        "the cat sat on the mat",
        {"rouge1": 2 / 3, "rouge2": 4 / 7, "rouge_l": 2 / 3, "exact_match": 0.0},
        "a prefix: precision 1, recall 1/2 (1-grams, LCS) and 2/5 (2-grams)",
    ),
    (
        "cats running",
        "cat runs",
        {"rouge1": 1.0, "rouge1_unstemmed": 0.0, "rouge_l": 1.0, "rouge_l_unstemmed": 0.0},
        "inflections: equal stems (cat, run), different words",
    ),
    (
        "The MAT!",
        "the mat",
        {"rouge1": 1.0, "rouge2": 1.0, "exact_match": 0.0},
        "case and punctuation are not words; exact match compares the texts",
    ),
    ("", "a cat", {"rouge1": 0.0, "rouge_l": 0.0}, "an empty answer recalls nothing: 0, defined"),
    (" a cat \n", "a cat", {"exact_match": 1.0}, "exact match strips surrounding whitespace"),
    ("mat cat", "cat mat", {"rouge1": 1.0, "rouge2": 0.0, "rouge_l": 0.5}, "order: LCS of 1"),
]


@pytest.mark.parametrize(
    ("answer", "reference", "expected"), [pytest.param(*c[:3], id=c[3]) for c in CASES]
)
def test_rouge_and_exact_match_on_worked_cases(
    answer: str, reference: str, expected: dict[str, float]
) -> None:
    got = rouge_and_exact([answer], [reference]).metrics
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def test_the_details_name_the_scorer_and_no_rouge_lsum_is_recorded() -> None:
    """rougeLsum needs nltk's Punkt model, which no installed package carries: not recorded
    under any name (decision 277)."""
    from importlib.metadata import version

    scored = rouge_and_exact(["a cat. a mat."], ["a cat.\na mat."])
    assert scored.details == {
        "rouge_variant": "mlperf (rouge-score, use_stemmer=True)",
        "scorer": f"rouge-score {version('rouge-score')}",
        "stemmer": f"nltk {version('nltk')} PorterStemmer (NLTK_EXTENSIONS)",
    }
    assert not [k for k in scored.metrics if "lsum" in k]


def test_a_reference_with_no_word_is_undefined_never_zero() -> None:
    """rouge-score gives 0 where the recall is 0/0; the run fails naming the sample."""
    assert _rouge_score("a cat", "!!", True)["rouge1"] == 0.0
    with pytest.raises(UndefinedMetric, match="sample 1's reference"):
        rouge_and_exact(["a cat", "a dog"], ["a cat", "!! ..."])


def test_a_pair_too_long_for_rouge_scores_table_is_refused_before_it_is_built() -> None:
    """rouge-score's ROUGE-L holds one integer per word pair: a pair over the bound fails the
    run naming it at once (the table would take 16 GB here), one within it is scored."""
    answer = " ".join(f"w{i % 97}" for i in range(20_000))
    reference = " ".join(f"w{i % 89}" for i in range(100_000))
    start = time.monotonic()
    with pytest.raises(TooLongForRouge, match=r"sample 0's answer \(20000 words\)") as refused:
        rouge_and_exact([answer], [reference])
    assert time.monotonic() - start < 5
    assert refused.value.answer_words * refused.value.reference_words > MAX_LCS_CELLS
    inside = rouge_and_exact([answer[:3000]], [reference[:3000]]).metrics
    assert 0 < inside["rouge_l"] < 1


def test_perplexity_is_the_exponent_of_the_mean_loss() -> None:
    import math

    assert perplexity([2.0, 4.0], 3) == pytest.approx(math.exp(2.0))
    with pytest.raises(UndefinedMetric):
        perplexity([], 0)
