"""CER, WER and exact match of decoded strings against reference texts (definitions in the
package's docstring), with a Levenshtein distance vectorised over one string per row."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from pinbench.evaluator.undefined import UndefinedMetric

Ints = npt.NDArray[np.int64]


def edit_distance(a: Ints, b: Ints) -> int:
    """The Levenshtein distance between two sequences of integers (insertions, deletions and
    substitutions, each 1). One NumPy pass per element of the shorter sequence: a row's
    insertions are a running minimum of ``row[j] - j``, plus ``j``."""
    if len(a) < len(b):
        a, b = b, a
    if not len(b):
        return len(a)
    steps = np.arange(len(a) + 1, dtype=np.int64)
    row = steps.copy()
    for i, symbol in enumerate(b, start=1):
        best = np.empty_like(row)
        best[0] = i
        np.minimum(row[1:] + 1, row[:-1] + (a != symbol), out=best[1:])
        row = np.minimum.accumulate(best - steps) + steps
    return int(row[-1])


def char_codes(text: str) -> Ints:
    """The code points of ``text``."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def text_metrics(decoded: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """``cer``, ``wer`` and ``exact_match`` of ``decoded`` against ``references`` (one each per
    sample, in the same order); ``UndefinedMetric`` where the references hold no character,
    or no word."""
    return error_rates(
        decoded,
        references,
        text=lambda t: t,
        words=str.split,
        no_char="the references hold no character (every text is empty)",
        no_word="the references hold no word (every text is whitespace)",
    )


def error_rates(
    decoded: Sequence[str],
    references: Sequence[str],
    *,
    text: Callable[[str], str],
    words: Callable[[str], list[str]],
    no_char: str,
    no_word: str,
) -> dict[str, float]:
    """Corpus-level ``cer`` over ``text(t)`` in code points, ``wer`` over ``words(t)`` and
    ``exact_match`` of the ``text(t)`` forms: one computation for the definitions of text
    recognition (texts as written) and speech (jiwer's transforms); ``no_char`` and ``no_word``
    say why a rate is undefined."""
    assert len(decoded) == len(references)
    if not references:
        raise UndefinedMetric(metric="exact_match", reason="no sample was scored")
    hyp_text, ref_text = [text(t) for t in decoded], [text(t) for t in references]
    chars = sum(len(r) for r in ref_text)
    if not chars:
        raise UndefinedMetric(metric="cer", reason=no_char)
    ids: dict[str, int] = {}
    ref_words = [_ids(words(t), ids) for t in references]
    hyp_words = [_ids(words(t), ids) for t in decoded]
    total_words = sum(len(w) for w in ref_words)
    if not total_words:
        raise UndefinedMetric(metric="wer", reason=no_word)
    char_edits = sum(
        edit_distance(char_codes(h), char_codes(r)) for h, r in zip(hyp_text, ref_text, strict=True)
    )
    word_edits = sum(edit_distance(h, r) for h, r in zip(hyp_words, ref_words, strict=True))
    exact = sum(h == r for h, r in zip(hyp_text, ref_text, strict=True))
    return {
        "cer": char_edits / chars,
        "wer": word_edits / total_words,
        "exact_match": exact / len(references),
    }


def _ids(words: list[str], ids: dict[str, int]) -> Ints:
    return np.array([ids.setdefault(w, len(ids)) for w in words], np.int64)
