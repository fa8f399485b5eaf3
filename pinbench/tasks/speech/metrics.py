"""Speech recognition's ``wer``, ``cer`` and ``exact_match`` (decision 247): jiwer 4's
``wer``/``cer`` with their default transforms, corpus-level, computed here with text
recognition's edit distance (jiwer is a test-only reference).

- ``cer`` (jiwer's ``cer_default``): each text stripped of leading and trailing whitespace
  (``str.strip()``), then the Levenshtein distance in code points, summed over samples, divided
  by the stripped references' total length.
- ``wer`` (jiwer's ``wer_default``): each run of two or more whitespace characters replaced by
  one space (``re.sub(r"\\s\\s+", " ", text)``), the text stripped, then split on the space
  character only (empty pieces dropped): a lone tab or no-break space is part of a word, as in
  jiwer. The distance over words, summed, divided by the references' total word count.
- ``exact_match``: the share of samples whose decoded text equals its reference once both are
  stripped (Whisper's decoded text starts with a space).

Undefined (``UndefinedMetric``, the run fails) where the stripped references hold no character
or no word: jiwer returns the insertion count there, which is not a rate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from pinbench.evaluator.undefined import UndefinedMetric
from pinbench.tasks.text_recognition.metrics import Ints, char_codes, edit_distance

_RUNS = re.compile(r"\s\s+")


def words_of(text: str) -> list[str]:
    """jiwer's ``wer_default`` words of ``text``."""
    return [w for w in _RUNS.sub(" ", text).strip().split(" ") if w]


def _word_ids(texts: Sequence[str], ids: dict[str, int]) -> list[Ints]:
    return [np.array([ids.setdefault(w, len(ids)) for w in words_of(t)], np.int64) for t in texts]


def speech_metrics(decoded: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """``wer``, ``cer`` and ``exact_match`` of ``decoded`` against ``references`` (one each per
    sample, in the same order), as the module defines them."""
    assert len(decoded) == len(references)
    if not references:
        raise UndefinedMetric(metric="exact_match", reason="no sample was scored")
    hyp_text = [t.strip() for t in decoded]
    ref_text = [t.strip() for t in references]
    chars = sum(len(r) for r in ref_text)
    if not chars:
        raise UndefinedMetric(
            metric="cer", reason="the references hold no character once stripped (as jiwer's)"
        )
    ids: dict[str, int] = {}
    ref_words, hyp_words = _word_ids(references, ids), _word_ids(decoded, ids)
    words = sum(len(w) for w in ref_words)
    if not words:
        raise UndefinedMetric(
            metric="wer", reason="the references hold no word (split as jiwer splits them)"
        )
    char_edits = sum(
        edit_distance(char_codes(h), char_codes(r)) for h, r in zip(hyp_text, ref_text, strict=True)
    )
    word_edits = sum(edit_distance(h, r) for h, r in zip(hyp_words, ref_words, strict=True))
    exact = sum(h == r for h, r in zip(hyp_text, ref_text, strict=True))
    return {
        "wer": word_edits / words,
        "cer": char_edits / chars,
        "exact_match": exact / len(references),
    }
