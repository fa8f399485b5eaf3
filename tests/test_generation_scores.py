"""pinbench's ROUGE against Google's ``rouge-score`` (the implementation MLPerf uses, with
``use_stemmer=True``; and without, for the ``_unstemmed`` names), and its bit-parallel LCS
against the textbook table, on texts the implementation did not choose."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.evaluator.undefined import UndefinedMetric
from pinbench.tasks.generation.scores import (
    lcs_length,
    perplexity,
    porter_stemmer,
    rouge_and_exact,
    words,
)

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


def _expected(pairs: list[tuple[str, str]], stemmed: bool) -> dict[str, float]:
    """rouge-score's F-measures, averaged over the answers (MLPerf's aggregation)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stemmed)
    expected = {"rouge1": 0.0, "rouge2": 0.0, "rouge_l": 0.0}
    for answer, reference in pairs:
        score = scorer.score(reference, answer)
        expected["rouge1"] += score["rouge1"].fmeasure / len(pairs)
        expected["rouge2"] += score["rouge2"].fmeasure / len(pairs)
        expected["rouge_l"] += score["rougeL"].fmeasure / len(pairs)
    return expected


@settings(max_examples=250, deadline=None)
@given(st.lists(st.tuples(any_text, any_text), min_size=1, max_size=5))
def test_rouge_is_rouge_scores_own_with_and_without_stemming(
    pairs: list[tuple[str, str]],
) -> None:
    """``rouge1``... are rouge-score's with ``use_stemmer=True`` (MLPerf's), the
    ``_unstemmed`` ones with ``use_stemmer=False``."""
    from rouge_score import tokenize

    pairs = [(a, r) for a, r in pairs if tokenize.tokenize(r, None)]
    if not pairs:
        return
    got = rouge_and_exact([a for a, _ in pairs], [r for _, r in pairs])
    for stemmed, suffix in ((True, ""), (False, "_unstemmed")):
        for key, value in _expected(pairs, stemmed).items():
            assert got[key + suffix] == pytest.approx(value, abs=1e-12), (key + suffix, pairs)


@settings(max_examples=250, deadline=None)
@given(any_text)
def test_words_are_rouge_scores_tokens_stemmed_or_not(sample: str) -> None:
    from nltk.stem import porter
    from rouge_score import tokenize

    assert words(sample) == tokenize.tokenize(sample, None)
    assert words(sample, porter_stemmer()) == tokenize.tokenize(sample, porter.PorterStemmer())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(INFLECTED),
            st.from_regex(r"[a-z]{1,20}", fullmatch=True),
            st.from_regex(
                r"[aeiouy]{0,3}[a-z]{0,6}(y{1,8}|ies|ied|ing|ed|s|alli|logi|ll)", fullmatch=True
            ),
            st.text(max_size=12),
        ),
        max_size=40,
    )
)
def test_the_stemmer_is_nltks_own(sample: list[str]) -> None:
    """pinbench's copy of nltk's Porter stemmer stems as nltk's does, in each of its modes."""
    from nltk.stem import porter

    from pinbench.tasks.generation.porter import PorterStemmer

    for mode in ("NLTK_EXTENSIONS", "MARTIN_EXTENSIONS", "ORIGINAL_ALGORITHM"):
        ours, theirs = PorterStemmer(mode), porter.PorterStemmer(mode)
        assert [ours.stem(w) for w in sample] == [theirs.stem(w) for w in sample], mode


def _code(source: str) -> str:
    """A module's ``PorterStemmer`` class as code only: no docstrings, annotations or bases."""
    import ast

    tree = ast.parse(source)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PorterStemmer"]
    cls.bases = []
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and ast.get_docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
        if isinstance(node, ast.FunctionDef):
            node.returns = None
            for arg in node.args.args:
                arg.annotation = None

    class Plain(ast.NodeTransformer):
        def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.Assign:
            assert node.value is not None
            return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)

    return ast.dump(Plain().visit(cls))


def test_the_stemmer_is_nltks_code_statement_for_statement() -> None:
    """The copy is nltk's class, only its docstrings, annotations and base class differ."""
    import inspect

    from nltk.stem import porter as theirs

    from pinbench.tasks.generation import porter as ours

    assert _code(inspect.getsource(ours)) == _code(inspect.getsource(theirs))


def test_stemming_matches_inflections_mlperfs_rouge_counts() -> None:
    """The same words inflected otherwise: equal stems, so MLPerf's ROUGE-1 counts them."""
    got = rouge_and_exact(["the cats were running studies"], ["a cat runs and studied"])
    assert got["rouge1_unstemmed"] == 0.0
    assert got["rouge1"] == pytest.approx(
        _expected([("the cats were running studies", "a cat runs and studied")], True)["rouge1"]
    )
    assert got["rouge1"] > 0.3  # cat, run and studi shared once stemmed


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
