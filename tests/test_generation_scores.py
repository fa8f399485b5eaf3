"""pinbench's ROUGE against Google's ``rouge-score`` (the implementation MLPerf uses), and its
bit-parallel LCS against the textbook table, on texts the implementation did not choose."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.evaluator.undefined import UndefinedMetric
from pinbench.tasks.generation.scores import lcs_length, perplexity, rouge_and_exact, words

WORDS = ["the", "cat", "sat", "on", "a", "mat", "Mat!", "dog's", "42", "x-y", "é", ""]
text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=30).map(" ".join)


def _table(a: list[str], b: list[str]) -> int:
    previous = [0] * (len(b) + 1)
    for word in a:
        row = [0]
        for j, other in enumerate(b, start=1):
            row.append(previous[j - 1] + 1 if word == other else max(previous[j], row[j - 1]))
        previous = row
    return previous[-1]


@given(
    st.lists(st.sampled_from("abcd"), max_size=40), st.lists(st.sampled_from("abcd"), max_size=40)
)
def test_bit_parallel_lcs_is_the_table(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == _table(a, b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(text, text), min_size=1, max_size=5))
def test_rouge_is_rouge_scores_own(pairs: list[tuple[str, str]]) -> None:
    from rouge_score import rouge_scorer, tokenize

    pairs = [(a, r) for a, r in pairs if tokenize.tokenize(r, None)]
    if not pairs:
        return
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    expected = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for answer, reference in pairs:
        for key, score in scorer.score(reference, answer).items():
            expected[key] += score.fmeasure / len(pairs)
    got = rouge_and_exact([a for a, _ in pairs], [r for _, r in pairs])
    assert got["rouge1"] == pytest.approx(expected["rouge1"], abs=1e-12)
    assert got["rouge2"] == pytest.approx(expected["rouge2"], abs=1e-12)
    assert got["rouge_l"] == pytest.approx(expected["rougeL"], abs=1e-12)
    assert words(pairs[0][1]) == tokenize.tokenize(pairs[0][1], None)


def test_a_reference_with_no_word_is_undefined_an_empty_answer_scores_zero() -> None:
    with pytest.raises(UndefinedMetric, match="sample 1's reference"):
        rouge_and_exact(["a cat", "a dog"], ["a cat", "!!"])
    assert rouge_and_exact(["", "a cat"], ["a dog", "a cat"])["rouge1"] == pytest.approx(0.5)


def test_a_long_answer_against_a_long_reference_is_scored_quickly() -> None:
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(500)]
    answer = " ".join(rng.choice(vocabulary) for _ in range(20_000))
    reference = " ".join(rng.choice(vocabulary) for _ in range(100_000))
    got = rouge_and_exact([answer], [reference])  # quadratic: 2e9 cells; bit-parallel: seconds
    assert 0 < got["rouge_l"] < 1


def test_perplexity_is_the_exponent_of_the_mean_loss() -> None:
    import math

    assert perplexity([2.0, 4.0], 3) == pytest.approx(math.exp(2.0))
    with pytest.raises(UndefinedMetric):
        perplexity([], 0)
