"""CER, WER and exact match of decoded strings against reference texts (definitions in the
package's docstring), with a Levenshtein distance vectorised over one string per row."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pinbench.worker.undefined import UndefinedMetric

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
    sample, in the same order), corpus-level, over the texts as written: ``cer`` in code points,
    ``wer`` over ``str.split()``'s words; ``UndefinedMetric`` where the references hold no
    character, or no word. Not jiwer's defaults, which strip each text and split words on
    single spaces only (speech recognition's, decision 247)."""
    assert len(decoded) == len(references)
    if not references:
        raise UndefinedMetric(metric="exact_match", reason="no sample was scored")
    chars = sum(len(r) for r in references)
    if not chars:
        raise UndefinedMetric(
            metric="cer", reason="the references hold no character (every text is empty)"
        )
    ids: dict[str, int] = {}
    ref_words = [_ids(t.split(), ids) for t in references]
    hyp_words = [_ids(t.split(), ids) for t in decoded]
    total_words = sum(len(w) for w in ref_words)
    if not total_words:
        raise UndefinedMetric(
            metric="wer", reason="the references hold no word (every text is whitespace)"
        )
    pairs = list(zip(decoded, references, strict=True))
    char_edits = sum(edit_distance(char_codes(h), char_codes(r)) for h, r in pairs)
    word_edits = sum(edit_distance(h, r) for h, r in zip(hyp_words, ref_words, strict=True))
    return {
        "cer": char_edits / chars,
        "wer": word_edits / total_words,
        "exact_match": sum(h == r for h, r in pairs) / len(references),
    }


def _ids(words: list[str], ids: dict[str, int]) -> Ints:
    return np.array([ids.setdefault(w, len(ids)) for w in words], np.int64)
